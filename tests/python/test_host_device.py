"""Placement end to end on a computing test backend that needs no GPU.

The "host-device" plugin (tests/plugins/host_device.cpp) keeps its buffers in its own
memory that the host cannot address, refuses the ops named in
POLYINFER_HOST_DEVICE_UNSUPPORTED (default ROPE) and computes the rest with the CPU
backend's kernels. So with any -ngl, any refused ops and any cost rule, the logits must
be bitwise equal to a CPU-only run (the same kernels on the same data, whatever the
copies between the two): exact equality is the stated tolerance.
Also: the layer map and the fallback note that --verbose shows, -ngl auto against the
device's reported free memory, out-of-memory as a one-line error, and auto selection.
"""
import json
import os
import pathlib
import struct
import subprocess

import numpy as np
import pytest

PLUGIN_DIR = os.environ.get("POLYINFER_HOST_DEVICE_DIR", "")


@pytest.fixture(scope="module")
def plugin_env():
    path = pathlib.Path(PLUGIN_DIR)
    if not (path / "libpolyinfer-host-device.so").is_file():
        pytest.fail(f"host-device plugin not found in '{PLUGIN_DIR}' (POLYINFER_HOST_DEVICE_DIR)")
    env = dict(os.environ)
    env["POLYINFER_BACKEND_PATH"] = str(path)
    for k in ("POLYINFER_BACKEND", "POLYINFER_DEVICES", "POLYINFER_PRIORITY",
              "POLYINFER_HOST_DEVICE_UNSUPPORTED", "POLYINFER_HOST_DEVICE_MEMORY",
              "POLYINFER_OFFLOAD_MIN_INTENSITY"):
        env.pop(k, None)
    env["XDG_CONFIG_HOME"] = "/nonexistent-polyinfer-test"
    return env


def run(bin_dir, env, *args, extra_env=None):
    e = dict(env, **(extra_env or {}))
    return subprocess.run([str(bin_dir / "polyinfer"), "run", *map(str, args)],
                          capture_output=True, text=True, timeout=300, env=e)


def read_pilg(path):
    b = pathlib.Path(path).read_bytes()
    assert b[:4] == b"PILG"
    _, n, v = struct.unpack("<3I", b[4:16])
    return np.frombuffer(b[16 + 4 * n:], dtype=np.float32).reshape(-1, v)


def logits(bin_dir, env, tmp_path, model, backend, ngl, extra_env=None, tag="x"):
    out = tmp_path / f"{tag}.pilg"
    cmd = [str(bin_dir / "polyinfer-logits"), "-m", str(model), "--tokens", "1,400,22,300,7",
           "-n", "6", "-b", "3", "--backend", backend, "--ngl", str(ngl), "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=dict(env, **(extra_env or {})))
    assert r.returncode == 0, r.stderr
    return read_pilg(out), r.stderr


@pytest.fixture(scope="module")
def oracles(models_dir):
    return json.loads((models_dir / "oracles.json").read_text())["cases"]


def test_ngl_3_puts_three_layers_on_the_device_and_prints_the_oracle(bin_dir, models_dir,
                                                                      plugin_env, oracles):
    case = next(c for c in oracles if c["model"] == "stories260K.gguf")
    r = run(bin_dir, plugin_env, "-m", models_dir / "stories260K.gguf", "--backend",
            "host-device", "-ngl", 3, "--verbose", "--temp", 0, "-n", case["n_generated"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == case["expected_text"] + "\n"
    assert "layers 0-1 on cpu:0" in r.stderr
    assert "layers 2-4 on host-device:0" in r.stderr
    assert "output on cpu:0" in r.stderr
    assert "offloaded 3/6 layers" in r.stderr
    notes = [l for l in r.stderr.splitlines() if l.startswith("note: ROPE")]
    assert len(notes) == 1, r.stderr  # once per run, not per token
    assert "host-device:0 does not support it" in notes[0]
    assert "memory:     host-device:0 (Host test device): weights" in r.stderr


def test_oracle_texts_with_everything_offloaded(bin_dir, models_dir, plugin_env, oracles):
    for case in oracles:
        prompt = ("-p", case["prompt"]) if case["prompt"] else ()
        r = run(bin_dir, plugin_env, "-m", models_dir / case["model"], *prompt, "--backend",
                "host-device", "-ngl", "all", "--temp", 0, "-n", case["n_generated"],
                "--no-display-prompt")
        assert r.returncode == 0, r.stderr
        assert r.stdout == case["expected_text"] + "\n", case["model"]


@pytest.fixture(scope="module")
def tiny_models(bin_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    out = []
    for arch, typ in (("llama", "q4_k_m"), ("llama", "q8_0"), ("qwen2", "f16"),
                      ("llama", "q4_0")):
        path = d / f"{arch}-{typ}.gguf"
        subprocess.run([str(bin_dir / "polyinfer"), "gen-model", "--preset", "tiny", "--arch",
                        arch, "--type", typ, "--seed", "5", "-o", str(path)], check=True,
                       capture_output=True)
        out.append(path)
    return out


@pytest.mark.parametrize("unsupported", ["ROPE", "", "MUL_MAT", "FLASH_ATTN,CPY",
                                         "RMS_NORM,SWIGLU,ADD"])
def test_logits_equal_the_cpu_run(bin_dir, models_dir, plugin_env, tmp_path, tiny_models,
                                  unsupported):
    extra = {"POLYINFER_HOST_DEVICE_UNSUPPORTED": unsupported}
    for model in [models_dir / "stories260K.gguf", models_dir / "TinyStories-656K-Q8_0.gguf",
                  *tiny_models]:
        want, _ = logits(bin_dir, plugin_env, tmp_path, model, "cpu", "all", tag="cpu")
        for ngl in (1, 3, "all"):
            got, err = logits(bin_dir, plugin_env, tmp_path, model, "host-device", ngl, extra)
            assert got.shape == want.shape
            assert np.array_equal(got, want), f"{model.name} -ngl {ngl}: max diff " \
                f"{np.abs(got - want).max()}\n{err}"


def test_cost_rule_threshold_does_not_change_results(bin_dir, models_dir, plugin_env, tmp_path):
    model = models_dir / "stories260K.gguf"
    want, _ = logits(bin_dir, plugin_env, tmp_path, model, "cpu", "all", tag="cpu")
    # MUL_MAT refused: SWIGLU sits alone on the device between two CPU matmuls, its
    # inputs on the CPU; the default threshold keeps it there, 0 sends it over.
    for intensity in ("0", "8"):
        got, err = logits(bin_dir, plugin_env, tmp_path, model, "host-device", "all",
                          {"POLYINFER_OFFLOAD_MIN_INTENSITY": intensity,
                           "POLYINFER_HOST_DEVICE_UNSUPPORTED": "MUL_MAT"})
        assert np.array_equal(got, want)
        assert ("SWIGLU run on cpu:0 rather than host-device:0" in err) == (intensity == "8"), err


def test_ngl_auto_fits_the_reported_free_memory(bin_dir, models_dir, plugin_env):
    args = ("-m", models_dir / "TinyStories-656K-Q8_0.gguf", "--backend", "host-device",
            "--verbose", "-p", "Hello", "-n", 4, "--temp", 0, "-c", 256)
    big = run(bin_dir, plugin_env, *args)
    assert big.returncode == 0, big.stderr
    line = next(l for l in big.stderr.splitlines() if "-ngl auto:" in l)
    assert "-ngl auto: 3 of 3 layers" in line  # 2 layers and the output
    layer_mib = float(line.split("output included, ")[1].split(" MiB")[0])
    margin = 512 << 20
    # Room for one and a half layers above the 512 MiB margin: the last layer only.
    one = run(bin_dir, plugin_env, *args, extra_env={
        "POLYINFER_HOST_DEVICE_MEMORY": str(margin + int(1.5 * layer_mib * (1 << 20)))})
    assert one.returncode == 0, one.stderr
    assert "-ngl auto: 1 of 3 layers" in one.stderr
    assert "layer 0 on cpu:0" in one.stderr and "layer 1 on host-device:0" in one.stderr
    none = run(bin_dir, plugin_env, *args,
               extra_env={"POLYINFER_HOST_DEVICE_MEMORY": str(100 << 20)})
    assert "-ngl auto: 0 of 3 layers" in none.stderr
    assert one.stdout == big.stdout == none.stdout


def test_out_of_device_memory_is_a_one_line_error(bin_dir, models_dir, plugin_env):
    r = run(bin_dir, plugin_env, "-m", models_dir / "TinyStories-656K-Q8_0.gguf", "--backend",
            "host-device", "-ngl", "all", "-p", "Hello", "-n", 4,
            extra_env={"POLYINFER_HOST_DEVICE_MEMORY": "1000"})
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "out of memory" in lines[0], r.stderr


def test_auto_picks_the_device_and_cpu_backend_opts_out(bin_dir, models_dir, plugin_env):
    args = ("-m", models_dir / "stories260K.gguf", "-p", "Once", "-n", 4, "--verbose")
    auto = run(bin_dir, plugin_env, *args)
    assert auto.returncode == 0, auto.stderr
    assert "device:   host-device:0" in auto.stderr
    assert "layers 0-4 on host-device:0" in auto.stderr
    cpu = run(bin_dir, plugin_env, *args, "--backend", "cpu")
    assert "layers 0-4 on cpu:0" in cpu.stderr
    assert "host-device" not in cpu.stderr.split("model:")[1]


def test_bad_placement_flags_are_one_line_errors(bin_dir, models_dir, plugin_env):
    base = ("-m", models_dir / "stories260K.gguf", "-p", "Once", "-n", 2, "--backend",
            "host-device")
    for flags, needle in ((("-ngl", "many"), "-ngl"), (("--split-mode", "row"), "--split-mode"),
                          (("--tensor-split", "1,x"), "--tensor-split"),
                          (("--tensor-split", "1,1"), "--tensor-split"),
                          (("--main-gpu", 3, "--split-mode", "none"), "--main-gpu")):
        r = run(bin_dir, plugin_env, *base, *flags)
        assert r.returncode != 0
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], (flags, r.stderr)
