"""`polyinfer gen-model` end to end: generate models with the CLI, load them with
gguf-py's GGUFReader (llama.cpp's own reader) and check the tensors and metadata a
llama.cpp loader expects. The expected layout and tensor-type recipe are written out
here independently of the C++ code (llama.cpp src/llama-quant.cpp llama_tensor_get_type).

llama-8b is only generated with POLYINFER_TEST_BIG=1 (4.9 GB); otherwise its plan is
checked with --dry-run.
"""
import json
import os
import pathlib
import subprocess

import pytest
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POLYINFER_BIN_DIR", REPO / "build" / "bin")) / "polyinfer"

FLOAT_TYPES = ["f32", "f16", "bf16"]
QUANT_TYPES = ["q8_0", "q4_0", "q4_k_m", "q5_k_m", "q6_k"]
FTYPE_ID = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "q4_k_m": 15, "q5_k_m": 17, "q6_k": 18,
            "bf16": 32}

PRESETS = {
    # arch, n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, rope base, eps, n_ctx, tied
    "tiny": ("llama", 256, 2, 4, 2, 512, None, 10000.0, 1e-5, 512, False),
    "llama-1b": ("llama", 2048, 16, 32, 8, 8192, 32000, 500000.0, 1e-5, 131072, True),
    "llama-8b": ("llama", 4096, 32, 32, 8, 14336, 128256, 500000.0, 1e-5, 8192, False),
    "qwen2-0.5b": ("qwen2", 896, 24, 14, 2, 4864, 151936, 1000000.0, 1e-6, 32768, True),
}


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def recipe(ftype, name, shape, layer, n_layer, is_output):
    if len(shape) == 1:
        return T.F32
    uniform = {"f32": T.F32, "f16": T.F16, "bf16": T.BF16, "q8_0": T.Q8_0, "q6_k": T.Q6_K}
    if ftype in uniform and not (ftype == "q6_k" and is_output):
        t = uniform[ftype]
    elif is_output:
        t = T.Q8_0 if ftype == "q8_0" or shape[0] % 256 else T.Q6_K
    elif ftype == "q4_0":
        t = T.Q4_0
    else:
        t = T.Q4_K if ftype == "q4_k_m" else T.Q5_K
        if name.endswith(("attn_v.weight", "ffn_down.weight")) and use_more_bits(layer, n_layer):
            t = T.Q6_K
    if shape[0] % 256:
        t = {T.Q4_K: T.Q5_0, T.Q5_K: T.Q5_1, T.Q6_K: T.Q8_0}.get(t, t)
    return t


def expected_tensors(preset, arch, ftype, n_vocab):
    _, d, n_layer, n_head, n_kv, n_ff, _, _, _, _, tied = PRESETS[preset]
    hd = d // n_head
    out = {}

    def add(name, shape, layer=-1, is_output=False):
        out[name] = (list(shape), recipe(ftype, name, shape, layer, n_layer, is_output))

    add("token_embd.weight", [d, n_vocab], is_output=tied)
    add("output_norm.weight", [d])
    if not tied:
        add("output.weight", [d, n_vocab], is_output=True)
    for i in range(n_layer):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", [d], i)
        add(p + "attn_q.weight", [d, n_head * hd], i)
        add(p + "attn_k.weight", [d, n_kv * hd], i)
        add(p + "attn_v.weight", [d, n_kv * hd], i)
        add(p + "attn_output.weight", [n_head * hd, d], i)
        add(p + "ffn_norm.weight", [d], i)
        add(p + "ffn_gate.weight", [d, n_ff], i)
        add(p + "ffn_up.weight", [d, n_ff], i)
        add(p + "ffn_down.weight", [n_ff, d], i)
        if arch == "qwen2":
            add(p + "attn_q.bias", [n_head * hd], i)
            add(p + "attn_k.bias", [n_kv * hd], i)
            add(p + "attn_v.bias", [n_kv * hd], i)
    return out


def expected_hparams(preset, arch, ftype):
    _, d, n_layer, n_head, n_kv, n_ff, _, base, eps, n_ctx, _ = PRESETS[preset]
    a = arch + "."
    return {
        "general.architecture": arch,
        "general.file_type": FTYPE_ID[ftype],
        "general.quantization_version": 2,
        a + "context_length": n_ctx,
        a + "embedding_length": d,
        a + "feed_forward_length": n_ff,
        a + "block_count": n_layer,
        a + "attention.head_count": n_head,
        a + "attention.head_count_kv": n_kv,
        a + "attention.layer_norm_rms_epsilon": pytest.approx(eps, rel=1e-6),
        a + "rope.freq_base": pytest.approx(base),
        a + "rope.dimension_count": d // n_head,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "qwen2" if arch == "qwen2" else "llama-bpe",
        "polyinfer.synthetic.seed": 42,
    }


def run_cli(*args):
    return subprocess.run([str(BIN), "gen-model", *args], capture_output=True, text=True,
                          check=False)


def generate(tmp_path, preset, arch, ftype):
    out = tmp_path / f"{preset}-{arch}-{ftype}.gguf"
    r = run_cli("--preset", preset, "--arch", arch, "--type", ftype, "--seed", "42", "-o",
                str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(str(out)) and "tensors" in r.stdout
    return GGUFReader(out)


def check_tokenizer(md, n_vocab):
    tokens = md["tokenizer.ggml.tokens"]
    types = md["tokenizer.ggml.token_type"]
    assert len(tokens) == n_vocab == len(types) == len(set(tokens))
    vocab = set(tokens)
    for m in md["tokenizer.ggml.merges"]:
        left, right = m.split(" ")
        assert left in vocab and right in vocab and left + right in vocab, m
    bos, eos = md["tokenizer.ggml.bos_token_id"], md["tokenizer.ggml.eos_token_id"]
    assert tokens[bos] == "<|begin_of_text|>" and tokens[eos] == "<|end_of_text|>"
    assert types[bos] == types[eos] == 3 and set(types[:256]) == {1}
    assert md["tokenizer.ggml.add_bos_token"] is True


def check_file(reader, preset, arch, ftype):
    md = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    n_vocab = md[arch + ".vocab_size"]
    if PRESETS[preset][6] is not None:
        assert n_vocab == PRESETS[preset][6]
    for key, want in expected_hparams(preset, arch, ftype).items():
        assert md[key] == want, key
    check_tokenizer(md, n_vocab)
    got = {t.name: ([int(x) for x in t.shape], t.tensor_type) for t in reader.tensors}
    assert got == expected_tensors(preset, arch, ftype, n_vocab)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("ftype", FLOAT_TYPES + QUANT_TYPES)
def test_tiny(tmp_path, arch, ftype):
    check_file(generate(tmp_path, "tiny", arch, ftype), "tiny", arch, ftype)


@pytest.mark.parametrize("preset", ["llama-1b", "qwen2-0.5b"])
def test_big_preset_q4_0(tmp_path, preset):
    arch = PRESETS[preset][0]
    check_file(generate(tmp_path, preset, arch, "q4_0"), preset, arch, "q4_0")


def test_qwen2_bf16(tmp_path):
    # A big preset in a float type (~1 GB, a few seconds).
    check_file(generate(tmp_path, "qwen2-0.5b", "qwen2", "bf16"), "qwen2-0.5b", "qwen2", "bf16")


@pytest.mark.skipif(os.environ.get("POLYINFER_TEST_BIG") != "1",
                    reason="writes up to 32 GB per file; set POLYINFER_TEST_BIG=1 (select with -k)")
@pytest.mark.parametrize("preset", ["llama-1b", "llama-8b", "qwen2-0.5b"])
@pytest.mark.parametrize("ftype", FLOAT_TYPES + QUANT_TYPES)
def test_big_preset_every_type(tmp_path, preset, ftype):
    arch = PRESETS[preset][0]
    try:
        check_file(generate(tmp_path, preset, arch, ftype), preset, arch, ftype)
    finally:
        for f in tmp_path.glob("*.gguf"):
            f.unlink()  # these files are large; keep at most one on disk


@pytest.mark.parametrize("preset", ["llama-1b", "llama-8b", "qwen2-0.5b"])
@pytest.mark.parametrize("ftype", FLOAT_TYPES + QUANT_TYPES)
def test_dry_run_plan(preset, ftype):
    r = run_cli("--preset", preset, "--type", ftype, "--seed", "42", "--dry-run")
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    arch = PRESETS[preset][0]
    md = plan["metadata"]
    for key, want in expected_hparams(preset, arch, ftype).items():
        assert md[key] == want, key
    n_vocab = md[arch + ".vocab_size"]
    assert n_vocab == PRESETS[preset][6]
    assert md["tokenizer.ggml.tokens"] == {"array": "STRING", "length": n_vocab}
    got = {t["name"]: (t["shape"], T[t["type"]]) for t in plan["tensors"]}
    assert got == expected_tensors(preset, arch, ftype, n_vocab)


def test_vocab_override():
    r = run_cli("--preset", "llama-1b", "--vocab", "128256", "--dry-run")
    plan = json.loads(r.stdout)
    assert plan["metadata"]["llama.vocab_size"] == 128256
    assert plan["n_params"] == 1235814400  # Llama-3.2-1B


@pytest.mark.parametrize("args, message", [
    (["--preset", "llama-70b"], "unknown preset 'llama-70b'"),
    (["--preset", "tiny", "--type", "q2_k"], "unknown --type 'q2_k'"),
    (["--preset", "tiny", "--arch", "gemma"], "unknown --arch 'gemma'"),
    (["--preset", "qwen2-0.5b", "--arch", "llama"], "preset qwen2-0.5b is a qwen2 model"),
    (["--preset", "tiny", "-o", "/nonexistent-dir/x.gguf"], "/nonexistent-dir/x.gguf"),
    (["--preset", "tiny"], "-o FILE is required"),
])
def test_errors_are_one_line(args, message):
    r = run_cli(*args)
    assert r.returncode != 0
    assert r.stderr.startswith("polyinfer: error: ") and message in r.stderr
    assert r.stderr.count("\n") == 1


def test_same_seed_same_file(tmp_path):
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    for p in (a, b):
        assert run_cli("--preset", "tiny", "--type", "bf16", "--seed", "9", "-o", str(p)).returncode == 0
    assert a.read_bytes() == b.read_bytes()
