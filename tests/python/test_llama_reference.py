"""Self-test of the float64 reference (`llama_reference.py`), independent of the engine.

What proves the reference right:

* Greedy generations recorded for real trained models (`oracles.json`: stories260K,
  200 tokens, whose text equals llama2.c's expected output, and two TinyStories-656K
  Q8_0 prompts, whose text equals real llama.cpp runs) are reproduced exactly. This
  fixes the llama GGUF conventions: adjacent RoPE pairs, GQA head mapping, tied output,
  RMSNorm epsilon, SwiGLU.
* The NeoX (qwen2) pairing, checked on a real model: the same TinyStories-656K as an
  HF F32 checkpoint (rotate-half layout, not permuted by the GGUF converter) run with
  NeoX pairs greedily agrees with the Q8_0 GGUF run with adjacent pairs for its first 59
  tokens from BOS (the two then split because the GGUF is quantized). Its weights also
  match the GGUF's to Q8_0 precision once the converter's Q/K row permutation is undone.
* Exact identities (float64 round-off, 1e-12): incremental (KV-cached) passes equal one
  causal pass; a model with Q/K rows permuted to the adjacent layout equals the NeoX
  model (with biases on Q/K/V); RoPE preserves norms and depends only on relative
  position; metadata (linear scaling, rope_freqs divisors, qwen2 arch) is read from a
  GGUF written with gguf-py.
"""
import dataclasses
import json
import struct

import numpy as np
import pytest
from gguf import GGUFWriter, RopeScalingType

import llama_reference as ref

HF_DIR = "TinyStories-656K-f32-safetensors"


def oracle_cases(models_dir):
    return json.loads((models_dir / "oracles.json").read_text())["cases"]


@pytest.mark.parametrize("case_index", [0, 1, 2])
def test_greedy_matches_oracle(models_dir, case_index):
    """Full-length greedy continuations equal the recorded oracle ids exactly."""
    case = oracle_cases(models_dir)[case_index]
    model = ref.load(models_dir / case["model"])
    got = model.greedy(case["prompt_ids"], case["n_generated"])
    assert len(case["generated_ids"]) == case["n_generated"]
    assert got == case["generated_ids"]


def test_shared_model_hparams(models_dir):
    """Metadata as documented in ../shared/models/README.md (defaults applied)."""
    hp = ref.load(models_dir / "stories260K.gguf").hp
    assert (hp.arch, hp.n_embd, hp.n_layer, hp.n_head, hp.n_head_kv) == ("llama", 64, 5, 8, 4)
    assert (hp.head_dim, hp.n_rot, hp.n_vocab, hp.n_ctx) == (8, 8, 512, 2048)
    assert hp.rope_base == 10000.0  # no rope.freq_base key: the default
    assert hp.rope_pairs == "adjacent" and hp.rope_pos_scale == 1.0
    assert hp.rms_eps == pytest.approx(1e-5, rel=1e-6)
    m = ref.load(models_dir / "TinyStories-656K-Q8_0.gguf")
    assert (m.hp.n_embd, m.hp.n_layer, m.hp.n_head, m.hp.n_head_kv, m.hp.n_vocab) == (128, 2, 8, 4, 2048)
    assert "output.weight" not in m.w and m.out_weight is m.w["token_embd.weight"]
    assert m.hp.rms_eps == pytest.approx(1e-6, rel=1e-6)


def test_load_is_cached(models_dir):
    assert ref.load(models_dir / "stories260K.gguf") is ref.load(models_dir / "stories260K.gguf")


@pytest.mark.parametrize("chunk", [1, 3, 7, 64])
def test_incremental_equals_one_pass(models_dir, chunk):
    """KV-cached chunks give the logits of a single causal pass (float64 round-off)."""
    case = oracle_cases(models_dir)[0]
    model = ref.load(models_dir / "stories260K.gguf")
    tokens = case["prompt_ids"] + case["generated_ids"][:40]
    full = model.logits(tokens)
    assert full.shape == (len(tokens), 512) and full.dtype == np.float64
    cache = model.new_cache()
    parts = [model.forward(tokens[i:i + chunk], cache) for i in range(0, len(tokens), chunk)]
    assert cache.n_past == len(tokens)
    np.testing.assert_allclose(np.concatenate(parts), full, rtol=0, atol=1e-12 * np.abs(full).max())


def test_causality(models_dir):
    """Changing a later token leaves the logits of earlier positions unchanged."""
    model = ref.load(models_dir / "stories260K.gguf")
    a = model.logits([1, 403, 407, 261, 378, 432])
    b = model.logits([1, 403, 407, 261, 100, 7])
    np.testing.assert_array_equal(a[:4], b[:4])
    assert np.abs(a[4:] - b[4:]).max() > 1e-3


# --- RoPE --------------------------------------------------------------------------


def _hp(**kw):
    base = dict(arch="llama", n_embd=64, n_layer=1, n_head=2, n_head_kv=1, head_dim=32, n_rot=32,
                rope_base=10000.0, rope_pos_scale=1.0, rope_pairs="adjacent", rms_eps=1e-5,
                n_ctx=4096, n_vocab=10)
    base.update(kw)
    return ref.HParams(**base)


@pytest.mark.parametrize("pairs", ["adjacent", "neox"])
def test_rope_rotation_properties(pairs):
    """RoFormer: rotations keep the norm; <R_m q, R_n k> depends only on m - n; position 0
    is the identity; elements at index >= n_rot pass through unchanged."""
    rng = np.random.default_rng(1)
    hp = _hp(n_rot=24)
    q = rng.standard_normal((1, 1, 32))
    k = rng.standard_normal((1, 1, 32))

    def rot(x, pos):
        return ref.apply_rope(x, ref.rope_angles(hp, np.array([pos])), hp.n_rot, pairs)

    np.testing.assert_allclose(rot(q, 0), q, rtol=0, atol=0)
    r = rot(q, 1234)
    assert np.linalg.norm(r) == pytest.approx(np.linalg.norm(q), rel=1e-14)
    np.testing.assert_array_equal(r[..., 24:], q[..., 24:])
    assert np.abs(r[..., :24] - q[..., :24]).max() > 0.1
    d1 = np.sum(rot(q, 17) * rot(k, 5))
    d2 = np.sum(rot(q, 112) * rot(k, 100))
    assert d1 == pytest.approx(d2, rel=1e-12)


def test_rope_pairings_differ_by_permutation():
    """NeoX pairs (i, i+n/2) are adjacent pairs (2i, 2i+1) after interleaving the halves."""
    rng = np.random.default_rng(2)
    hp = _hp()
    x = rng.standard_normal((5, 3, 32))
    angles = ref.rope_angles(hp, np.arange(100, 105))
    perm = np.empty(32, dtype=int)  # adjacent index 2i <- neox i, 2i+1 <- neox i+16
    perm[0::2], perm[1::2] = np.arange(16), np.arange(16, 32)
    np.testing.assert_allclose(ref.apply_rope(x[..., perm], angles, 32, "adjacent"),
                               ref.apply_rope(x, angles, 32, "neox")[..., perm], rtol=0, atol=1e-14)


def test_rope_angles_formula():
    """angle[p, i] = p * scale * base^(-2i/n_rot) / divisor_i."""
    hp = _hp(n_rot=8, rope_base=500000.0, rope_pos_scale=0.25)
    div = np.array([1.0, 2.0, 4.0, 8.0])
    got = ref.rope_angles(hp, np.array([0, 3, 1000]), div)
    for pi, p in enumerate([0, 3, 1000]):
        for i in range(4):
            assert got[pi, i] == pytest.approx(p * 0.25 * 500000.0 ** (-2 * i / 8) / div[i], rel=1e-15)


# --- The NeoX path on a real model, and the converter's Q/K permutation -----------------


def _read_safetensors(path):
    """Minimal safetensors reader (8-byte LE header length, JSON header, raw F32 data)."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32"
        a, b = info["data_offsets"]
        data = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4")
        out[name] = data.reshape(info["shape"]).astype(np.float64)
    return out


def _hf_as_gguf_names(st, n_layer):
    hf = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
          "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
          "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
          "mlp.down_proj": "ffn_down"}
    w = {"token_embd.weight": st["lm_head.weight"], "output_norm.weight": st["model.norm.weight"]}
    for layer in range(n_layer):
        for a, b in hf.items():
            w[f"blk.{layer}.{b}.weight"] = st[f"model.layers.{layer}.{a}.weight"]
    return w


def _to_adjacent_rows(w, n_heads):
    """Reorder projection rows (or bias entries) from NeoX/HF order to the GGUF llama order:
    within each head, new row 2j is old row j and new row 2j+1 is old row j + hd/2."""
    hd = w.shape[0] // n_heads
    return w.reshape(n_heads, 2, hd // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_neox_path_on_hf_checkpoint(models_dir):
    gguf_model = ref.load(models_dir / "TinyStories-656K-Q8_0.gguf")
    hp = gguf_model.hp
    w = _hf_as_gguf_names(_read_safetensors(models_dir / HF_DIR / "model.safetensors"), hp.n_layer)
    assert w.keys() == gguf_model.w.keys()
    # Same model: every tensor within Q8_0 rounding (scale/2 per element, scale = amax/127)
    # of the GGUF's, Q and K after the converter's row permutation.
    for name, a in w.items():
        if name.endswith("attn_q.weight"):
            a = _to_adjacent_rows(a, hp.n_head)
        elif name.endswith("attn_k.weight"):
            a = _to_adjacent_rows(a, hp.n_head_kv)
        bound = np.abs(a).max() / 127 * 0.6  # + f16 rounding of the scale
        assert np.abs(a - gguf_model.w[name]).max() <= bound, name

    hf_model = ref.ReferenceModel(dataclasses.replace(hp, rope_pairs="neox"), w)
    a = hf_model.greedy([1], 60)
    b = gguf_model.greedy([1], 60)
    assert a[:59] == b[:59]
    assert a[59] != b[59]  # README: the runs split at token 59 because of quantization


def test_permuted_adjacent_equals_neox_with_biases(models_dir):
    """HF-layout weights + NeoX RoPE (qwen2 style, with Q/K/V biases) equal the same
    weights with Q/K rows (and Q/K biases) permuted to the adjacent layout + adjacent RoPE."""
    hp = ref.load(models_dir / "TinyStories-656K-Q8_0.gguf").hp
    w = _hf_as_gguf_names(_read_safetensors(models_dir / HF_DIR / "model.safetensors"), hp.n_layer)
    rng = np.random.default_rng(3)
    for layer in range(hp.n_layer):
        for t, n in (("attn_q", hp.n_head), ("attn_k", hp.n_head_kv), ("attn_v", hp.n_head_kv)):
            w[f"blk.{layer}.{t}.bias"] = 0.3 * rng.standard_normal(n * hp.head_dim)
    neox = ref.ReferenceModel(dataclasses.replace(hp, arch="qwen2", rope_pairs="neox"), w)
    w2 = dict(w)
    for layer in range(hp.n_layer):
        for t, n in (("attn_q", hp.n_head), ("attn_k", hp.n_head_kv)):
            for s in ("weight", "bias"):
                w2[f"blk.{layer}.{t}.{s}"] = _to_adjacent_rows(w[f"blk.{layer}.{t}.{s}"], n)
    adjacent = ref.ReferenceModel(hp, w2)
    tokens = [1] + list(rng.integers(0, 2048, 30))
    la, lb = neox.logits(tokens), adjacent.logits(tokens)
    np.testing.assert_allclose(la, lb, rtol=0, atol=1e-11 * np.abs(la).max())
    # The biases matter (the check above is not vacuous).
    no_bias = ref.ReferenceModel(neox.hp, {k: v for k, v in w.items() if not k.endswith(".bias")})
    assert np.abs(no_bias.logits(tokens) - la).max() > 1e-2 * la.std()


# --- Metadata read from a GGUF written with gguf-py -------------------------------------


def _write_tiny(path, arch, *, scaling=None, rope_freqs=None, biases=False, tied=False, seed=0):
    rng = np.random.default_rng(seed)
    d, n_layer, H, Hkv, ff, V = 32, 1, 4, 2, 48, 40
    hd = d // H
    w = {"token_embd.weight": rng.standard_normal((V, d)).astype(np.float32),
         "output_norm.weight": (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)}
    if not tied:
        w["output.weight"] = (rng.standard_normal((V, d)) / np.sqrt(d)).astype(np.float32)
    p = "blk.0."
    for name, shape in (("attn_q", (H * hd, d)), ("attn_k", (Hkv * hd, d)), ("attn_v", (Hkv * hd, d)),
                        ("attn_output", (d, H * hd)), ("ffn_gate", (ff, d)), ("ffn_up", (ff, d)),
                        ("ffn_down", (d, ff))):
        w[p + name + ".weight"] = (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)
    for name in ("attn_norm", "ffn_norm"):
        w[p + name + ".weight"] = (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)
    if biases:
        for name, n in (("attn_q", H * hd), ("attn_k", Hkv * hd), ("attn_v", Hkv * hd)):
            w[p + name + ".bias"] = (0.1 * rng.standard_normal(n)).astype(np.float32)
    if rope_freqs is not None:
        w["rope_freqs.weight"] = np.asarray(rope_freqs, dtype=np.float32)
    writer = GGUFWriter(str(path), arch)
    writer.add_context_length(64)
    writer.add_embedding_length(d)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(H)
    writer.add_head_count_kv(Hkv)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(5000.0)
    if scaling is not None:
        writer.add_rope_scaling_type(RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(scaling)
    for name, a in w.items():
        assert a.dtype == np.float32, name
        writer.add_tensor(name, a)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {k: v.astype(np.float64) for k, v in w.items()}


def test_metadata_from_written_gguf(tmp_path):
    path = tmp_path / "q.gguf"
    w = _write_tiny(path, "qwen2", scaling=4.0, biases=True, tied=True)
    m = ref.load(path)
    assert m.hp == ref.HParams(arch="qwen2", n_embd=32, n_layer=1, n_head=4, n_head_kv=2, head_dim=8,
                               n_rot=8, rope_base=5000.0, rope_pos_scale=0.25, rope_pairs="neox",
                               rms_eps=m.hp.rms_eps, n_ctx=64, n_vocab=40)
    assert m.hp.rms_eps == pytest.approx(1e-5, rel=1e-6)
    for name, a in w.items():
        np.testing.assert_array_equal(m.w[name], a)
    assert m.out_weight is m.w["token_embd.weight"]
    # Linear scaling: the angle at position p is the unscaled angle at p / 4.
    unscaled = dataclasses.replace(m.hp, rope_pos_scale=1.0)
    np.testing.assert_allclose(ref.rope_angles(m.hp, np.arange(0, 40, 4)),
                               ref.rope_angles(unscaled, np.arange(10)), rtol=1e-15, atol=0)


def test_rope_freqs_tensor_divides_angles(tmp_path):
    path = tmp_path / "l.gguf"
    _write_tiny(path, "llama", rope_freqs=[1.0, 2.0, 8.0, 32.0])
    m = ref.load(path)
    assert m.hp.rope_pos_scale == 1.0 and m.hp.rope_pairs == "adjacent"
    np.testing.assert_array_equal(m.freq_divisors, [1.0, 2.0, 8.0, 32.0])
    plain = ref.ReferenceModel(m.hp, {k: v for k, v in m.w.items() if k != "rope_freqs.weight"})
    tokens = [3, 1, 4, 1, 5, 9, 2, 6]
    assert np.abs(m.logits(tokens)[1:] - plain.logits(tokens)[1:]).max() > 1e-3
    np.testing.assert_array_equal(m.logits(tokens)[0], plain.logits(tokens)[0])  # position 0


def test_errors(tmp_path, models_dir):
    model = ref.load(models_dir / "stories260K.gguf")
    with pytest.raises(ValueError, match="out of range"):
        model.logits([1, 512])
    with pytest.raises(ValueError, match="context length"):
        model.logits([1] * 2049)
