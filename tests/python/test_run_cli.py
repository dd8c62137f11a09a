"""`polyinfer run`: greedy text equals the oracles, sampling is reproducible by
seed, statistics are printed, Ctrl-C stops cleanly, and bad input gets a
one-line error with a non-zero exit."""
import json
import signal
import subprocess
import time

import gguf
import numpy as np
import pytest


def run(bin_dir, *args, timeout=120):
    return subprocess.run([str(bin_dir / "polyinfer"), "run", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(r, *needles):
    assert r.returncode != 0, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.fixture(scope="module")
def oracles(models_dir):
    return json.loads((models_dir / "oracles.json").read_text())["cases"]


def test_greedy_text_equals_oracles(bin_dir, models_dir, oracles):
    checked = 0
    for case in oracles:
        # No -p at all: generation starts from BOS alone (an explicit empty -p is an error).
        prompt = ("-p", case["prompt"]) if case["prompt"] else ()
        r = run(bin_dir, "-m", models_dir / case["model"], *prompt, "--temp", 0,
                "-n", case["n_generated"], "--no-display-prompt")
        assert r.returncode == 0, r.stderr
        assert r.stdout == case["expected_text"] + "\n"
        checked += 1
    assert checked == 3


def test_prompt_is_echoed_and_stats_printed(bin_dir, models_dir):
    r = run(bin_dir, "-m", models_dir / "TinyStories-656K-Q8_0.gguf", "-p", "Hello", "--temp", 0,
            "-n", 8)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Hello and a girl")
    for key in ("load:", "prompt:", "generation:", "tok/s"):
        assert key in r.stderr
    assert "    4 tokens" in r.stderr  # BOS + 3 prompt tokens
    assert "    8 tokens" in r.stderr


def test_same_seed_same_text(bin_dir, models_dir):
    args = ("-m", models_dir / "stories260K.gguf", "-p", "Once", "-n", 60, "--temp", 1.0)
    a = run(bin_dir, *args, "--seed", 7)
    b = run(bin_dir, *args, "--seed", 7)
    c = run(bin_dir, *args, "--seed", 8)
    assert a.returncode == b.returncode == c.returncode == 0
    assert a.stdout == b.stdout
    assert a.stdout != c.stdout


def test_prompt_file(bin_dir, models_dir, tmp_path):
    p = tmp_path / "prompt.txt"
    p.write_text("Once upon a time")
    r = run(bin_dir, "-m", models_dir / "TinyStories-656K-Q8_0.gguf", "-f", p, "--temp", 0, "-n", 4,
            "--no-display-prompt")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(", a little girl")


def test_ctrl_c_stops_and_prints_stats(bin_dir, models_dir):
    proc = subprocess.Popen([str(bin_dir / "polyinfer"), "run", "-m", str(models_dir / "stories260K.gguf"),
                             "-p", "Once", "-c", "32768", "-n", "-1", "--ignore-eos", "--temp", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.read(16)  # generation has started once text flows
    assert first
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "generation:" in err and "interrupted" in err


def write_gguf(path, arch):
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(1)
    w.add_tensor("token_embd.weight", np.ones((8, 4), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_bad_input(bin_dir, models_dir, tmp_path):
    model = models_dir / "stories260K.gguf"
    assert_one_line_error(run(bin_dir, "-m", tmp_path / "missing.gguf", "-p", "x"), "missing.gguf")
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 40)
    assert_one_line_error(run(bin_dir, "-m", corrupt, "-p", "x"), "corrupt.gguf")
    other = tmp_path / "mamba.gguf"
    write_gguf(other, "mamba")
    assert_one_line_error(run(bin_dir, "-m", other, "-p", "x"), "unsupported model architecture 'mamba'")
    assert_one_line_error(run(bin_dir, "-m", models_dir / "vocab" / "ggml-vocab-llama-spm.gguf", "-p", "x"),
                          "not a model")
    assert_one_line_error(run(bin_dir, "-m", model, "-p", ""), "empty prompt")
    assert_one_line_error(run(bin_dir, "-m", model, "-p", "Once upon a time " * 20, "-c", 16),
                          "does not fit the context")
    assert_one_line_error(run(bin_dir, "-m", model, "-p", "x", "--cache-type", "q4_0"), "--cache-type")
    assert_one_line_error(run(bin_dir, "-m", model, "-p", "x", "--top-p", 2), "top_p")
    # An explicit backend that is not there is an error naming what is, never a CPU run.
    # metal: no Linux build has it (vulkan and cuda may be built, and vulkan usable on lavapipe).
    assert_one_line_error(run(bin_dir, "-m", model, "-p", "x", "--backend", "metal"),
                          "metal is not usable", "available: ", "cpu:0")
