// The weights of a llama-family model bound to a device: each a tensor
// descriptor (type, shape) plus its place in a device buffer. On a device that
// can address host memory (the CPU) the mmapped GGUF is wrapped as is, so the
// weights are never copied; elsewhere they are uploaded once at load.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backend/device.hpp"
#include "graph/graph.hpp"
#include "model/llama_hparams.hpp"
#include "polyinfer/gguf.hpp"

namespace polyinfer {

struct WeightRef {
  GgmlType type;
  Shape ne;
  pi_buffer buffer = nullptr;
  uint64_t offset = 0;
  bool present() const { return buffer != nullptr; }
};

struct LlamaLayerWeights {
  WeightRef attn_norm, wq, wk, wv, wo, bq, bk, bv;  // biases: qwen2 only
  WeightRef ffn_norm, ffn_gate, ffn_up, ffn_down;
};

struct LlamaWeights {
  WeightRef tok_embd, output_norm, output;  // output = tok_embd when tied
  WeightRef rope_freqs;                     // llama3 per-frequency divisors, optional
  std::vector<LlamaLayerWeights> layers;
  std::vector<DeviceBuffer> storage;
};

// Called while weights are paged in or uploaded: bytes done, bytes in all.
using LoadProgress = std::function<void(uint64_t done, uint64_t total)>;

// Binds every tensor, checking names and shapes against hp (n_ff is taken from
// the tensors). Throws Error(kBadModel) naming the first missing or misshapen
// tensor, Error(kUnsupported) for a weight type the device cannot use.
LlamaWeights load_llama_weights(const GgufFile& file, LlamaHParams& hp, const BackendDevice& dev,
                                const LoadProgress& progress);

}  // namespace polyinfer
