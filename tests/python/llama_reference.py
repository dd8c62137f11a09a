"""Float64 NumPy reference forward pass for GGUF `llama` and `qwen2` models.

This module is the test suite's independent oracle for the engine's logits. It
shares no code with the engine: the file is read with gguf-py (`gguf.GGUFReader`,
llama.cpp's own Python reader), every tensor is dequantized with
`gguf.quants.dequantize` and widened to float64, and the transformer is written out
below from the papers and the GGUF conventions, with every intermediate in float64.

Sources of the formulas:

* File layout, metadata keys and tensor names: the GGUF specification
  (ggml-org/ggml docs/gguf.md) and llama.cpp's tensor naming (`token_embd`,
  `blk.N.attn_q`, ...). A weight whose ggml shape is ne = [K, N] (ne[0] = input
  dimension) is the NumPy array W of shape (N, K) that gguf-py returns, and the
  layer computes y = W @ x.
* RMSNorm: Zhang & Sennrich 2019, "Root Mean Square Layer Normalization":
  y = x / sqrt(mean(x^2) + eps) * g.
* RoPE: Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position
  Embedding": a pair (a, b) at position p is rotated by the angle
  p * base^(-2i/n_rot) for its pair index i. Which two elements form pair i depends on
  the architecture (see `apply_rope`).
* SwiGLU feed-forward: Shazeer 2020, "GLU Variants Improve Transformer":
  FFN(x) = W_down (silu(W_gate x) * (W_up x)), silu(z) = z * sigmoid(z).
* Attention: Vaswani et al. 2017, softmax(q k^T / sqrt(head_dim)) v with a causal
  mask; grouped-query attention (Ainslie et al. 2023, "GQA"): query head h reads
  KV head h // (n_head / n_head_kv).

GGUF conventions that these formulas need (facts, checked by the self-test
`test_llama_reference.py` against greedy generations of real trained models):

* `llama`: llama.cpp's HF converter permutes the rows of the Q and K projections so
  that in the GGUF file the rotated pairs are ADJACENT elements (2i, 2i+1) of each
  head (ggml rope mode 0, "normal").
* `qwen2`: Q and K are stored as in the HF checkpoint, so the pairs are
  (i, i + n_rot/2) (ggml "NeoX" rope). qwen2 has biases on Q, K and V.
* Dimensions of a head at index >= n_rot (`rope.dimension_count`) are not rotated.
* Linear RoPE scaling (`rope.scaling.type` = "linear", or the older
  `rope.scale_linear` key) divides the positions by `rope.scaling.factor`.
  A `rope_freqs.weight` tensor (llama 3.1 style) holds one divisor per frequency:
  angle_i = p * base^(-2i/n_rot) / rope_freqs[i].
* Without `output.weight` the output projection is `token_embd.weight` (tied).

Public API:

* `load(path) -> ReferenceModel`: cached per file (path, size, mtime), so that the
  dequantization is done once per model in a pytest session.
* `ReferenceModel.logits(tokens) -> float64 [n_tokens, n_vocab]`: one causal pass.
* `ReferenceModel.forward(tokens, cache)`: incremental pass that extends a `KVCache`.
* `ReferenceModel.greedy(prompt, n_gen) -> list[int]`: argmax continuation.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import pathlib

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

SUPPORTED_ARCHS = ("llama", "qwen2")


@dataclasses.dataclass(frozen=True)
class HParams:
    """Model hyper-parameters, as read from the GGUF metadata (`{arch}.*` keys).

    `rope_pairs` is "adjacent" (pairs (2i, 2i+1), ggml rope mode 0, used by llama)
    or "neox" (pairs (i, i + n_rot/2), used by qwen2). `rope_pos_scale` multiplies
    the positions (1 / linear scaling factor; 1.0 when there is no scaling).
    """

    arch: str
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_rot: int
    rope_base: float
    rope_pos_scale: float
    rope_pairs: str
    rms_eps: float
    n_ctx: int
    n_vocab: int


@dataclasses.dataclass
class KVCache:
    """Roped keys and values of the positions consumed so far.

    k[l], v[l]: float64 arrays of shape (n_past, n_head_kv, head_dim) for layer l.
    """

    k: list
    v: list

    @property
    def n_past(self) -> int:
        return 0 if not self.k else self.k[0].shape[0]


def _field(reader: GGUFReader, key: str, default=None, required: bool = False):
    field = reader.fields.get(key)
    if field is None:
        if required:
            raise ValueError(f"GGUF metadata key {key!r} missing")
        return default
    return field.contents()


def read_gguf(path) -> tuple[HParams, dict]:
    """Read a GGUF model: its hparams and every tensor dequantized to float64.

    Returns (hparams, weights) where weights maps the tensor name to a float64 array
    in gguf-py's NumPy shape (ggml ne reversed: a matrix of ne [K, N] is (N, K), a
    vector is (K,)).
    """
    reader = GGUFReader(str(path))
    arch = _field(reader, "general.architecture", required=True)
    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"architecture {arch!r} not supported by the reference")

    weights = {}
    for t in reader.tensors:
        w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64)
        shape = tuple(int(n) for n in reversed(list(t.shape)))
        weights[t.name] = w.reshape(shape)

    n_embd = int(_field(reader, f"{arch}.embedding_length", required=True))
    n_head = int(_field(reader, f"{arch}.attention.head_count", required=True))
    n_head_kv = int(_field(reader, f"{arch}.attention.head_count_kv", n_head))
    head_dim = n_embd // n_head
    for key in ("key_length", "value_length"):
        explicit = _field(reader, f"{arch}.attention.{key}")
        if explicit is not None and int(explicit) != head_dim:
            raise ValueError(f"{arch}.attention.{key} = {explicit} != n_embd / n_head: not supported")
    n_rot = int(_field(reader, f"{arch}.rope.dimension_count", head_dim))

    factor = 1.0
    scaling = _field(reader, f"{arch}.rope.scaling.type", "none")
    if scaling == "linear":
        factor = float(_field(reader, f"{arch}.rope.scaling.factor", required=True))
    elif scaling != "none":
        raise ValueError(f"rope scaling type {scaling!r} not supported by the reference")
    old_linear = _field(reader, f"{arch}.rope.scale_linear")
    if old_linear is not None and scaling == "none":
        factor = float(old_linear)
    if factor <= 0:
        raise ValueError(f"rope scaling factor {factor} must be positive")

    out = weights.get("output.weight", weights["token_embd.weight"])
    hp = HParams(
        arch=arch,
        n_embd=n_embd,
        n_layer=int(_field(reader, f"{arch}.block_count", required=True)),
        n_head=n_head,
        n_head_kv=n_head_kv,
        head_dim=head_dim,
        n_rot=n_rot,
        rope_base=float(_field(reader, f"{arch}.rope.freq_base", 10000.0)),
        rope_pos_scale=1.0 / factor,
        rope_pairs="adjacent" if arch == "llama" else "neox",
        rms_eps=float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon", required=True)),
        n_ctx=int(_field(reader, f"{arch}.context_length", required=True)),
        n_vocab=out.shape[0],
    )
    return hp, weights


def rms_norm(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm (Zhang & Sennrich 2019) over the last axis: x / sqrt(mean(x^2) + eps) * g.

    x: float64 (..., n), g: float64 (n,).
    """
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def silu(z: np.ndarray) -> np.ndarray:
    """silu(z) = z * sigmoid(z) = z / (1 + exp(-z)) (Shazeer 2020 / Elfwing et al. 2018)."""
    return z / (1.0 + np.exp(-z))


def rope_angles(hp: HParams, positions: np.ndarray, freq_divisors=None) -> np.ndarray:
    """Rotation angles, float64 (n_pos, n_rot/2): angle[p, i] = pos * s * base^(-2i/n_rot) / f_i.

    s = hp.rope_pos_scale (linear scaling), f_i = freq_divisors[i] (the
    `rope_freqs.weight` tensor) or 1. RoFormer (Su et al. 2021), eq. (15).
    """
    i = np.arange(hp.n_rot // 2, dtype=np.float64)
    inv_freq = hp.rope_base ** (-2.0 * i / hp.n_rot)
    if freq_divisors is not None:
        inv_freq = inv_freq / np.asarray(freq_divisors, dtype=np.float64)
    pos = np.asarray(positions, dtype=np.float64) * hp.rope_pos_scale
    return pos[:, None] * inv_freq[None, :]


def apply_rope(x: np.ndarray, angles: np.ndarray, n_rot: int, pairs: str) -> np.ndarray:
    """Rotate the first n_rot elements of every head vector; the rest pass through.

    x: float64 (n_pos, n_heads, head_dim); angles: float64 (n_pos, n_rot/2).
    pairs="adjacent": pair i is (x[2i], x[2i+1]); pairs="neox": (x[i], x[i+n_rot/2]).
    Each pair (a, b) becomes (a cos t - b sin t, a sin t + b cos t) (RoFormer eq. 34).
    """
    half = n_rot // 2
    cos = np.cos(angles)[:, None, :]
    sin = np.sin(angles)[:, None, :]
    out = x.copy()
    if pairs == "adjacent":
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = a * cos - b * sin
        out[..., 1:n_rot:2] = a * sin + b * cos
    elif pairs == "neox":
        a, b = x[..., :half], x[..., half:n_rot]
        out[..., :half] = a * cos - b * sin
        out[..., half:n_rot] = a * sin + b * cos
    else:
        raise ValueError(f"unknown rope pairing {pairs!r}")
    return out


class ReferenceModel:
    """The float64 forward pass of a llama / qwen2 model held in memory.

    `weights` maps GGUF tensor names to float64 arrays in gguf-py's shapes (see
    `read_gguf`). Optional tensors: `output.weight` (else tied to `token_embd.weight`),
    `blk.N.attn_{q,k,v,output}.bias` (added when present; qwen2 has q/k/v biases),
    `rope_freqs.weight` (per-frequency divisors).
    """

    def __init__(self, hp: HParams, weights: dict):
        if hp.n_head % hp.n_head_kv:
            raise ValueError(f"n_head {hp.n_head} not a multiple of n_head_kv {hp.n_head_kv}")
        if hp.n_rot % 2 or hp.n_rot > hp.head_dim:
            raise ValueError(f"rope dimension count {hp.n_rot} invalid for head_dim {hp.head_dim}")
        self.hp = hp
        self.w = weights
        self.out_weight = weights.get("output.weight", weights["token_embd.weight"])
        self.freq_divisors = weights.get("rope_freqs.weight")

    def new_cache(self) -> KVCache:
        return KVCache(k=[], v=[])

    def _linear(self, name: str, x: np.ndarray) -> np.ndarray:
        """y = x @ W^T (+ b): x (T, K) float64, W (N, K) -> (T, N)."""
        y = x @ self.w[name + ".weight"].T
        bias = self.w.get(name + ".bias")
        return y if bias is None else y + bias

    def forward(self, tokens, cache: KVCache) -> np.ndarray:
        """Consume `tokens` after the cache's n_past positions; return their logits.

        tokens: sequence of T ints in [0, n_vocab). Returns float64 (T, n_vocab);
        row t is the next-token logits after tokens[..t] (causal: position
        n_past + t attends to positions 0 .. n_past + t). The cache is extended.
        """
        hp = self.hp
        tokens = np.asarray(tokens, dtype=np.int64)
        n_new = tokens.shape[0]
        if n_new == 0:
            return np.zeros((0, hp.n_vocab))
        if tokens.min() < 0 or tokens.max() >= self.w["token_embd.weight"].shape[0]:
            raise ValueError("token id out of range")
        n_past = cache.n_past
        n_total = n_past + n_new
        if n_total > hp.n_ctx:
            raise ValueError(f"{n_total} positions exceed the context length {hp.n_ctx}")

        H, Hkv, hd = hp.n_head, hp.n_head_kv, hp.head_dim
        group = H // Hkv
        angles = rope_angles(hp, np.arange(n_past, n_total), self.freq_divisors)
        # mask[t, s]: query n_past+t may read key s iff s <= n_past+t.
        allowed = np.arange(n_total)[None, :] <= (n_past + np.arange(n_new))[:, None]
        scale = 1.0 / np.sqrt(hd)

        x = self.w["token_embd.weight"][tokens]  # (T, n_embd)
        for layer in range(hp.n_layer):
            p = f"blk.{layer}."
            h = rms_norm(x, self.w[p + "attn_norm.weight"], hp.rms_eps)
            q = self._linear(p + "attn_q", h).reshape(n_new, H, hd)
            k = self._linear(p + "attn_k", h).reshape(n_new, Hkv, hd)
            v = self._linear(p + "attn_v", h).reshape(n_new, Hkv, hd)
            q = apply_rope(q, angles, hp.n_rot, hp.rope_pairs)
            k = apply_rope(k, angles, hp.n_rot, hp.rope_pairs)
            if layer < len(cache.k):
                cache.k[layer] = np.concatenate([cache.k[layer], k])
                cache.v[layer] = np.concatenate([cache.v[layer], v])
            else:
                cache.k.append(k)
                cache.v.append(v)
            # GQA: np.repeat gives query head h the KV head h // group.
            keys = np.repeat(cache.k[layer], group, axis=1)  # (S, H, hd)
            vals = np.repeat(cache.v[layer], group, axis=1)
            scores = np.einsum("thd,shd->hts", q, keys) * scale
            scores = np.where(allowed[None], scores, -np.inf)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            attn = np.einsum("hts,shd->thd", probs, vals).reshape(n_new, H * hd)
            x = x + self._linear(p + "attn_output", attn)

            h = rms_norm(x, self.w[p + "ffn_norm.weight"], hp.rms_eps)
            gate = self._linear(p + "ffn_gate", h)
            up = self._linear(p + "ffn_up", h)
            x = x + self._linear(p + "ffn_down", silu(gate) * up)

        x = rms_norm(x, self.w["output_norm.weight"], hp.rms_eps)
        return x @ self.out_weight.T

    def logits(self, tokens) -> np.ndarray:
        """Logits of every position of `tokens` in one causal pass: float64 (T, n_vocab)."""
        return self.forward(tokens, self.new_cache())

    def greedy(self, prompt, n_gen: int) -> list:
        """Greedy (argmax) continuation: the n_gen generated token ids (prompt excluded)."""
        cache = self.new_cache()
        logits = self.forward(prompt, cache)
        out = []
        for _ in range(n_gen):
            tok = int(np.argmax(logits[-1]))
            out.append(tok)
            logits = self.forward([tok], cache)
        return out


@functools.lru_cache(maxsize=64)
def _load_cached(path: str, size: int, mtime_ns: int) -> ReferenceModel:
    hp, weights = read_gguf(path)
    return ReferenceModel(hp, weights)


def load(path) -> ReferenceModel:
    """The ReferenceModel of a GGUF file, dequantized once per (path, size, mtime)."""
    path = pathlib.Path(path).resolve()
    st = os.stat(path)
    return _load_cached(str(path), st.st_size, st.st_mtime_ns)
