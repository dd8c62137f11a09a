// The KV cache: per layer, K and V for every position of the context, each
// [head_dim, n_head_kv, n_ctx] (ggml order) in the cache type (F16 by default,
// F32 or Q8_0 on request), in a buffer on the layer's device. Position p of
// layer l holds the keys/values of token p of the sequence.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/device.hpp"
#include "graph/graph.hpp"
#include "model/llama_hparams.hpp"

namespace polyinfer {

class KvCache {
 public:
  // Throws Error(kInvalidArgument) when the type cannot hold head_dim-long rows
  // (Q8_0 needs head_dim % 32 == 0) or is not F32/F16/Q8_0.
  // Layer il lives on devices[layer_device[il]] (graph device numbers).
  KvCache(const std::vector<const BackendDevice*>& devices, const std::vector<int>& layer_device,
          const LlamaHParams& hp, int64_t n_ctx, GgmlType type);

  GgmlType type() const { return type_; }
  int64_t n_ctx() const { return n_ctx_; }
  uint64_t bytes() const { return 2 * layer_bytes_ * n_layer_; }
  uint64_t bytes_on(int device) const;
  // K and V of one layer, in bytes.
  static uint64_t layer_bytes(const LlamaHParams& hp, int64_t n_ctx, GgmlType type);

  // View of positions [p0, p0 + n) of layer il as [head_dim, n_head_kv, n] for writing.
  TensorId k_slot(Graph& g, int il, int64_t p0, int64_t n) const { return slot(g, il, 0, p0, n); }
  TensorId v_slot(Graph& g, int il, int64_t p0, int64_t n) const { return slot(g, il, 1, p0, n); }
  // View of positions [0, n_kv) of layer il as [head_dim, n_kv, n_head_kv] for attention.
  TensorId k_view(Graph& g, int il, int64_t n_kv) const { return view(g, il, 0, n_kv); }
  TensorId v_view(Graph& g, int il, int64_t n_kv) const { return view(g, il, 1, n_kv); }

 private:
  uint64_t base(int kv) const { return kv * layer_bytes_; }
  TensorId slot(Graph& g, int il, int kv, int64_t p0, int64_t n) const;
  TensorId view(Graph& g, int il, int kv, int64_t n_kv) const;

  GgmlType type_;
  int64_t n_ctx_, head_dim_, n_head_kv_, n_layer_;
  uint64_t row_bytes_;    // one head's row
  uint64_t layer_bytes_;  // K (or V) of one layer
  std::vector<int> layer_device_;
  std::vector<DeviceBuffer> buffers_;  // per layer: K then V
};

}  // namespace polyinfer
