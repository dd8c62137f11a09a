// The weights of a llama-family model bound to the devices of a run: each a
// tensor descriptor (type, shape) plus its place in a buffer of the device its
// layer was placed on (layer_placement.hpp; storage: weight_store.hpp). Token
// embeddings stay on the CPU (the last device); the output goes with the map.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/device.hpp"
#include "graph/graph.hpp"
#include "model/layer_placement.hpp"
#include "model/llama_hparams.hpp"
#include "model/weight_store.hpp"
#include "polyinfer/gguf.hpp"

namespace polyinfer {

struct LlamaLayerWeights {
  WeightRef attn_norm, wq, wk, wv, wo, bq, bk, bv;  // biases: qwen2 only
  WeightRef ffn_norm, ffn_gate, ffn_up, ffn_down;
  WeightRef rope_freqs;  // llama3 per-frequency divisors (optional), on this layer's device
};

struct LlamaWeights {
  WeightRef tok_embd, output_norm, output;  // output = tok_embd when tied
  std::vector<LlamaLayerWeights> layers;
  std::unique_ptr<WeightStore> store;
};

// Checks names, shapes and types against hp and completes it (n_vocab, n_ff from
// the tensors). Throws Error(kBadModel) naming the first missing or misshapen
// tensor, Error(kUnsupported) for a weight type without kernels.
void check_llama_tensors(const GgufFile& file, LlamaHParams& hp);

// Bytes of the largest layer and of the output, for -ngl auto.
ModelFootprint llama_footprint(const GgufFile& file, const LlamaHParams& hp,
                               uint64_t kv_bytes_per_layer);

// Loads every tensor onto its device: layer il on devices[map.layer_device[il]],
// the output on devices[map.output_device], token embeddings on the CPU (last).
LlamaWeights load_llama_weights(const GgufFile& file, const LlamaHParams& hp,
                                const std::vector<const BackendDevice*>& devices,
                                const LayerMap& map, const LoadProgress& progress);

}  // namespace polyinfer
