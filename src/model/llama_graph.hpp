// The forward pass of a llama-family model (llama, qwen2) as an op graph over
// one batch of tokens at positions [n_past, n_past + n_tokens):
//   x = embd[tokens]
//   per layer: x += Wo · attn(rope(Wq·n(x)+bq), rope(Wk·n(x)+bk), Wv·n(x)+bv)
//              x += Wdown · (silu(Wgate·n(x)) * Wup·n(x))      (n = RMSNorm·weight)
//   logits = Wout · n(x)
// (Touvron et al. 2023, LLaMA; GQA: Ainslie et al. 2023.) K and V of the batch
// are written into the KV cache, and attention reads the cache.
#pragma once
#include <cstdint>

#include "graph/graph.hpp"
#include "model/kv_cache.hpp"
#include "model/llama_hparams.hpp"
#include "model/llama_weights.hpp"

namespace polyinfer {

struct ForwardGraph {
  Graph graph;
  TensorId tokens;     // input I32 [n_tokens]
  TensorId positions;  // input I32 [n_tokens]
  TensorId mask;       // input F32 [n_kv, n_tokens]: 0 where visible, -inf elsewhere
  TensorId logits;     // output F32 [n_vocab, n_out] (n_out = n_tokens or 1)
  int64_t n_kv;
};

ForwardGraph build_llama_graph(const LlamaHParams& hp, const LlamaWeights& w, const KvCache& kv,
                               int64_t n_tokens, int64_t n_past, bool all_logits);

}  // namespace polyinfer
