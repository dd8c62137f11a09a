"""The engine's logits (`polyinfer-logits`) against the float64 NumPy reference.

`polyinfer-logits -m MODEL --tokens a,b,c [-n N_GEN] [-b N_BATCH] [--cache-type T] [-t N] -o OUT`
evaluates the prompt in batches of N_BATCH, then generates N_GEN tokens greedily, and
writes every position's logits (format in `read_pilg`). Each run here is compared
position by position with `llama_reference.py` (float64, weights dequantized by gguf-py,
verified against greedy generations of real models by `test_llama_reference.py`). The
reference is run on the engine's own token sequence (prompt + what it generated), so
prefill batches and single-token decode steps are compared the same way and a
generation that drifts does not compound.

Metric, per position i, with s_i = std over the vocabulary of the reference logits:
  err_max[i] = max_v |engine[i,v] - ref[i,v]| / s_i
  err_rms[i] = sqrt(mean_v (engine[i,v] - ref[i,v])^2) / s_i
Asserted: max_i err_max <= tol_max, max_i err_rms <= tol_rms, and at every position
whose reference top-2 margin exceeds TOP1_MARGIN * tol_rms * s_i the engine's argmax
is the reference's argmax (tol_rms has >= 2x headroom over the measured per-logit rms
error, so such a flip needs a difference of two logit errors > 5 sigma: a bug, not
rounding).
Also: the prompt is echoed, and generated token j equals the argmax of the engine's
own logits at the position before it (exact).

Tolerances: tol = WEIGHT_TOL[weight type] + CACHE_TOL[cache type] (independent error
sources add). The reference uses the same dequantized weights as the engine, so the
weight type matters only through what the engine does to the activations:
  * f32: float32 arithmetic only (~1e-6 relative per dot product of length <= 512,
    grown by softmax, exp and two layers).
  * f16 / bf16: ggml-style kernels round the activations to the weight's type before
    the dot product: unit round-off 2^-11 (f16) and 2^-8 (bf16) per element.
  * quantized types: activations go to 8-bit blocks (Q8_0, 32 per f16 scale, for
    Q4_0/Q5_x/Q8_0 weights; Q8_K, 256 per f32 scale, for K-quants): rounding error
    up to amax/254 per element, i.e. ~0.5-1 % relative per dot product, the same for
    every weight type within a family (the 256-blocks have a larger amax, hence more).
  * KV cache: f16 rounds K and V (and, in ggml-style kernels, Q and the softmax
    weights) to 2^-11; q8_0 quantizes them like the activations above.
Values: the reasoning above, checked by measurement (docs/TESTING.md, "Logits against
the float64 reference", has the tables): a float32 simulation of those ggml-style
numerics (activations rounded/quantized per weight type, f16/q8_0 cache) measured, on
these very cases, err_max up to 3e-3 (f16), 3e-2 (bf16), 1.1e-1 (Q8_0 activations),
1.5e-1 (Q8_K activations), cache f16 +3e-3, q8_0 +5e-2, err_rms about 1/4 of that;
the tolerances give >= 2x headroom over those. The first engine (scalar kernels, weights
dequantized to f32, activations not quantized) measured ~6e-6 for every weight type with
an f32 cache and ~2e-3 with the f16 cache. Set POLYINFER_LOGITS_REPORT to a file to get
one JSON line of measured errors per run appended there.
"""
import json
import os
import pathlib
import struct
import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader

import llama_reference as ref

# Tolerances: (tol_max, tol_rms) in units of the reference logits' std per position.
# THE table; everything below reads it.
WEIGHT_TOL = {
    "f32": (1e-4, 2e-5),
    "f16": (1e-2, 3e-3),
    "bf16": (6e-2, 2e-2),
    "q8_0": (2.5e-1, 6e-2),
    "q4_0": (2.5e-1, 6e-2),
    "q4_k_m": (3e-1, 8e-2),
    "q5_k_m": (3e-1, 8e-2),
    "q6_k": (3e-1, 8e-2),
}
CACHE_TOL = {
    "f32": (0.0, 0.0),
    "f16": (1.5e-2, 5e-3),
    "q8_0": (1e-1, 3e-2),
}
TOP1_MARGIN = 4.0  # top-1 must agree where the reference margin > 4 * tol_rms * std

TINY_TYPES = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m", "q5_k_m", "q6_k"]
# The weight type the bulk of a tiny file's matrices must have (gen-model recipe).
MAIN_QTYPE = {"f32": Q.F32, "f16": Q.F16, "bf16": Q.BF16, "q8_0": Q.Q8_0, "q4_0": Q.Q4_0,
              "q4_k_m": Q.Q4_K, "q5_k_m": Q.Q5_K, "q6_k": Q.Q6_K}
TINY_HP = dict(n_embd=256, n_layer=2, n_head=4, n_head_kv=2, head_dim=64, n_rot=64, n_vocab=584)


def tolerance(wtype, cache):
    (wm, wr), (cm, cr) = WEIGHT_TOL[wtype], CACHE_TOL[cache]
    return wm + cm, wr + cr


# --- running the tool ----------------------------------------------------------------------


# The backend under test: every layer on it (POLYINFER_LOGITS_BACKEND, default cpu). The
# tolerances are the CPU's, which rounds activations more than a GPU backend does.
BACKEND = os.environ.get("POLYINFER_LOGITS_BACKEND", "cpu")


@pytest.fixture(scope="session")
def logits_tool(bin_dir):
    tool = bin_dir / "polyinfer-logits"
    if not tool.is_file():
        pytest.fail(f"polyinfer-logits not found in {bin_dir}")
    return tool


def read_pilg(path):
    """Parse OUT.bin: b'PILG', u32 version=1, u32 n_tokens, u32 n_vocab,
    i32 tokens[n_tokens], f32 logits[n_tokens][n_vocab] (little-endian, nothing after).
    Returns (tokens: list[int], logits: float64 [n_tokens, n_vocab])."""
    raw = pathlib.Path(path).read_bytes()
    assert raw[:4] == b"PILG", raw[:4]
    version, n_tokens, n_vocab = struct.unpack("<III", raw[4:16])
    assert version == 1
    assert len(raw) == 16 + 4 * n_tokens + 4 * n_tokens * n_vocab, "file size does not match header"
    tokens = np.frombuffer(raw, dtype="<i4", count=n_tokens, offset=16).tolist()
    logits = np.frombuffer(raw, dtype="<f4", offset=16 + 4 * n_tokens).reshape(n_tokens, n_vocab)
    return tokens, logits.astype(np.float64)


def run_logits(tool, model, tokens, out, *, n_gen=0, n_batch=None, cache=None, threads=None):
    cmd = [str(tool), "-m", str(model), "--tokens", ",".join(map(str, tokens)), "-o", str(out)]
    if n_gen:
        cmd += ["-n", str(n_gen)]
    if n_batch is not None:
        cmd += ["-b", str(n_batch)]
    if cache is not None:
        cmd += ["--cache-type", cache]
    if threads is not None:
        cmd += ["-t", str(threads)]
    if BACKEND != "cpu":
        cmd += ["--backend", BACKEND, "--ngl", "all"]
    # Poison: a stale file from an earlier run must not pass for this run's output.
    pathlib.Path(out).write_bytes(b"stale")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(cmd)}\nexit {proc.returncode}: {proc.stderr}"
    return read_pilg(out)


# --- the comparison --------------------------------------------------------------------------


def compare(model_path, prompt, n_gen, eng_tokens, eng_logits, wtype, cache, label):
    """Assert the engine's run against the reference (see the module docstring)."""
    model = ref.load(model_path)
    n = len(prompt) + n_gen
    assert eng_logits.shape == (n, model.hp.n_vocab)
    assert len(eng_tokens) == n
    assert eng_tokens[:len(prompt)] == list(prompt), "prompt not echoed"
    assert np.isfinite(eng_logits).all(), "non-finite logits"
    for j in range(len(prompt), n):
        assert eng_tokens[j] == int(np.argmax(eng_logits[j - 1])), f"generated token {j} is not the argmax"

    r = model.logits(eng_tokens)
    std = r.std(axis=1)
    diff = np.abs(eng_logits - r)
    err_max = diff.max(axis=1) / std
    err_rms = np.sqrt((diff ** 2).mean(axis=1)) / std
    top2 = np.sort(r, axis=1)[:, -2:]
    margin = (top2[:, 1] - top2[:, 0]) / std
    tol_max, tol_rms = tolerance(wtype, cache)
    clear = margin > TOP1_MARGIN * tol_rms
    flips = np.flatnonzero(clear & (np.argmax(eng_logits, axis=1) != np.argmax(r, axis=1)))

    measured = dict(case=label, weights=wtype, cache=cache, n_tokens=n,
                    err_max=float(err_max.max()), err_max_at=int(err_max.argmax()),
                    err_rms=float(err_rms.max()), err_rms_mean=float(err_rms.mean()),
                    tol_max=tol_max, tol_rms=tol_rms, n_clear=int(clear.sum()), flips=flips.tolist())
    report = os.environ.get("POLYINFER_LOGITS_REPORT")
    if report:
        with open(report, "a") as f:
            f.write(json.dumps(measured) + "\n")
    msg = json.dumps(measured)
    assert err_max.max() <= tol_max, msg
    assert err_rms.max() <= tol_rms, msg
    assert flips.size == 0, msg
    # The top-1 check must cover some positions (simulated: 30-100 % of them clear).
    assert clear.sum() >= n // 8, msg


# --- shared real models ----------------------------------------------------------------------


def oracle(models_dir, index):
    return json.loads((models_dir / "oracles.json").read_text())["cases"][index]


@pytest.mark.parametrize("cache,threads", [("f32", 1), ("f16", 2)])
def test_stories260k(logits_tool, models_dir, tmp_path, cache, threads):
    """F32 weights: BOS + the oracle's first 20 tokens (3 batches of 7), then 12 decode steps."""
    case = oracle(models_dir, 0)
    prompt = case["prompt_ids"] + case["generated_ids"][:20]
    model = models_dir / "stories260K.gguf"
    toks, logits = run_logits(logits_tool, model, prompt, tmp_path / "out.bin", n_gen=12, n_batch=7,
                              cache=cache, threads=threads)
    compare(model, prompt, 12, toks, logits, "f32", cache, f"stories260K/{cache}")
    # A trained model reproduces the oracle's greedy continuation (margins are clear there).
    assert toks[len(prompt):] == case["generated_ids"][20:32]


def test_tinystories_656k_q8_0(logits_tool, models_dir, tmp_path):
    """Q8_0 weights, tied output; prompt of 16 in batches 5,5,5,1; default (f16) cache."""
    case = oracle(models_dir, 1)
    prompt = case["prompt_ids"] + case["generated_ids"][:10]
    model = models_dir / "TinyStories-656K-Q8_0.gguf"
    toks, logits = run_logits(logits_tool, model, prompt, tmp_path / "out.bin", n_gen=16, n_batch=5)
    compare(model, prompt, 16, toks, logits, "q8_0", "f16", "656K-q8_0/f16")


# --- gen-model tiny models -------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_models(bin_dir, tmp_path_factory):
    """Generate (once per session) tiny models on demand: get(arch, wtype) -> path."""
    root = tmp_path_factory.mktemp("tiny")
    made = {}

    def get(arch, wtype):
        key = (arch, wtype)
        if key not in made:
            seed = 1000 + 17 * TINY_TYPES.index(wtype) + (0 if arch == "llama" else 7)
            path = root / f"tiny-{arch}-{wtype}.gguf"
            cmd = [str(bin_dir / "polyinfer"), "gen-model", "--preset", "tiny", "--arch", arch,
                   "--type", wtype, "--seed", str(seed), "-o", str(path)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, f"{' '.join(cmd)}: {proc.stderr}"
            hp = ref.load(path).hp
            for k, v in TINY_HP.items():
                assert getattr(hp, k) == v, (k, getattr(hp, k))
            assert hp.arch == arch
            types = [t.tensor_type for t in GGUFReader(str(path)).tensors if len(t.shape) == 2]
            assert types.count(MAIN_QTYPE[wtype]) >= len(types) // 2, types
            made[key] = path
        return made[key]

    return get


def tiny_prompt(arch, wtype, n=37):
    rng = np.random.default_rng([TINY_TYPES.index(wtype), 0 if arch == "llama" else 1])
    return rng.integers(0, TINY_HP["n_vocab"], n).tolist()


@pytest.mark.parametrize("wtype", TINY_TYPES)
@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("cache", ["f32", "f16"])
def test_tiny(logits_tool, tiny_models, tmp_path, arch, wtype, cache):
    """37 random prompt tokens in batches 16,16,5, then 8 decode steps; 2 threads.
    The f16 runs leave --cache-type out, so they also cover the default."""
    model = tiny_models(arch, wtype)
    prompt = tiny_prompt(arch, wtype)
    toks, logits = run_logits(logits_tool, model, prompt, tmp_path / "out.bin", n_gen=8, n_batch=16,
                              cache=None if cache == "f16" else cache, threads=2)
    compare(model, prompt, 8, toks, logits, wtype, cache, f"tiny-{arch}-{wtype}/{cache}")


@pytest.mark.parametrize("wtype", ["f32", "q4_0"])
def test_tiny_q8_0_cache(logits_tool, tiny_models, tmp_path, wtype):
    """The q8_0 KV cache: with F32 weights, so that the cache is the only approximation;
    with Q4_0 weights, so that a GPU backend's fused decode step (the attention writing
    the O product's 8-bit codes) reads a q8_0 cache too."""
    model = tiny_models("llama", wtype)
    prompt = tiny_prompt("llama", wtype)
    toks, logits = run_logits(logits_tool, model, prompt, tmp_path / "out.bin", n_gen=8, n_batch=16,
                              cache="q8_0", threads=2)
    compare(model, prompt, 8, toks, logits, wtype, "q8_0", f"tiny-llama-{wtype}/q8_0")


def test_prefill_batch_extremes(logits_tool, tiny_models, tmp_path):
    """The whole prompt in one batch (default -b) and one token per batch (-b 1)."""
    model = tiny_models("qwen2", "q4_0")
    prompt = tiny_prompt("qwen2", "q4_0")
    a_toks, a = run_logits(logits_tool, model, prompt, tmp_path / "a.bin", n_batch=512)
    b_toks, b = run_logits(logits_tool, model, prompt, tmp_path / "b.bin", n_batch=1)
    compare(model, prompt, 0, a_toks, a, "q4_0", "f16", "tiny-qwen2-q4_0/f16/b512")
    compare(model, prompt, 0, b_toks, b, "q4_0", "f16", "tiny-qwen2-q4_0/f16/b1")


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["token_out_of_range", "missing_model", "bad_cache_type"])
def test_errors(logits_tool, models_dir, tmp_path, what):
    model, tokens, extra = models_dir / "stories260K.gguf", "1,2,3", []
    if what == "token_out_of_range":
        tokens = "1,512"  # n_vocab is 512
    elif what == "missing_model":
        model = tmp_path / "nope.gguf"
    else:
        extra = ["--cache-type", "q3_z"]
    cmd = [str(logits_tool), "-m", str(model), "--tokens", tokens, "-o", str(tmp_path / "o.bin")] + extra
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
