"""`polyinfer info` on the real shared models (checked against gguf-py) and on
corrupt files (one-line error, non-zero exit, nothing on stdout)."""
import json
import struct
import subprocess

import gguf
import pytest

GGUF_FILES = [
    "stories260K.gguf",
    "TinyStories-656K-Q8_0.gguf",
    "vocab/ggml-vocab-llama-spm.gguf",
    "vocab/ggml-vocab-gpt-2.gguf",
    "vocab/ggml-vocab-starcoder.gguf",
]


def info(bin_dir, *args):
    return subprocess.run([str(bin_dir / "polyinfer"), "info", *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def test_stories260k_text(bin_dir, models_dir):
    r = info(bin_dir, models_dir / "stories260K.gguf")
    assert r.returncode == 0, r.stderr
    lines = {line.split(None, 1)[0]: line.split(None, 1)[1] for line in r.stdout.splitlines()
             if line.strip() and not line.startswith(" ")}
    assert lines["architecture"] == "llama"
    assert lines["layers"] == "5"
    assert lines["n_embd"] == "64"
    assert lines["heads"].startswith("8/4 ")
    assert lines["vocab"] == "512"
    assert lines["tensors"].startswith("48, 292800 parameters")
    assert "  F32          48 tensors, 1171200 bytes" in r.stdout


def test_stories260k_json(bin_dir, models_dir):
    r = info(bin_dir, models_dir / "stories260K.gguf", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["architecture"] == "llama"
    h = j["hparams"]
    assert (h["block_count"], h["embedding_length"], h["head_count"], h["head_count_kv"],
            h["vocab_size"]) == (5, 64, 8, 4, 512)
    assert j["tensor_types"] == {"F32": {"count": 48, "bytes": 1171200}}
    assert j["tokenizer"]["model"] == "llama" and j["tokenizer"]["n_tokens"] == 512


@pytest.mark.parametrize("name", GGUF_FILES)
def test_every_shared_gguf_matches_gguf_py(bin_dir, models_dir, name):
    path = models_dir / name
    r = info(bin_dir, path, "--json", "--tensors", "--metadata")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    ref = gguf.GGUFReader(path)
    assert j["architecture"] == ref.fields["general.architecture"].contents()
    assert j["n_metadata"] == len([k for k in ref.fields if not k.startswith("GGUF.")])
    assert [m["key"] for m in j["metadata"]] == [k for k in ref.fields if not k.startswith("GGUF.")]
    assert j["tokenizer"]["n_tokens"] == len(ref.fields["tokenizer.ggml.tokens"].data)
    assert [(t["name"], t["type"], t["shape"], t["offset"], t["bytes"]) for t in j["tensors"]] == [
        (t.name, t.tensor_type.name, [int(x) for x in t.shape], int(t.data_offset), int(t.n_bytes))
        for t in ref.tensors]
    text = info(bin_dir, path)
    assert text.returncode == 0 and f"architecture   {j['architecture']}" in text.stdout


def corrupt_variants(data: bytes):
    """(label, bytes) pairs made from a valid GGUF file."""
    n_kv_at, first_key_len_at = 16, 24
    yield "empty", b""
    yield "magic only", data[:4]
    yield "bad magic", b"GGUX" + data[4:]
    yield "gguf v1", data[:4] + struct.pack("<I", 1) + data[8:]
    yield "gguf v4", data[:4] + struct.pack("<I", 4) + data[8:]
    yield "huge n_kv", data[:n_kv_at] + struct.pack("<Q", 2**62) + data[n_kv_at + 8:]
    yield "huge n_tensors", data[:8] + struct.pack("<Q", 2**62) + data[16:]
    yield "huge key length", (data[:first_key_len_at] + struct.pack("<Q", 2**50)
                              + data[first_key_len_at + 8:])
    for cut in (8, 20, 30, 100, 1000, len(data) // 2, len(data) - 1):
        yield f"truncated at {cut}", data[:cut]


@pytest.mark.parametrize("name", ["stories260K.gguf", "TinyStories-656K-Q8_0.gguf"])
def test_corrupt_files_fail_with_one_line(bin_dir, models_dir, tmp_path, name):
    data = (models_dir / name).read_bytes()
    for label, blob in corrupt_variants(data):
        path = tmp_path / "corrupt.gguf"
        path.write_bytes(blob)
        r = info(bin_dir, path)
        assert r.returncode == 1, label
        assert r.stdout == "", label
        err = r.stderr.splitlines()
        assert len(err) == 1 and err[0].startswith("polyinfer: error: "), (label, r.stderr)
        assert str(path) in err[0], label


def test_not_a_model_missing_file_and_directory(bin_dir, models_dir, tmp_path):
    for path in (models_dir / "oracles.json", tmp_path / "missing.gguf", models_dir):
        r = info(bin_dir, path)
        assert r.returncode == 1, path
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("polyinfer: error: ")


def test_usage_errors_exit_non_zero(bin_dir):
    assert info(bin_dir).returncode != 0
    assert info(bin_dir, "a.gguf", "--no-such-flag").returncode != 0
    r = subprocess.run([str(bin_dir / "polyinfer")], capture_output=True, text=True)
    assert r.returncode != 0
