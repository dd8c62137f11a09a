// The fields of a decode graph that change at every token: the attention's
// KV length (FLASH_ATTN's K and V views and its mask grow by one position)
// and where the ROPE+KV unit writes the new K and V rows (the cache views'
// offsets move by one row). The kernels that take those nodes read these
// values from a small device array that the stream uploads before each
// submit, and the graph key leaves them out (graph_keys.hpp), so that one
// CUDA graph replays at every step instead of having those nodes captured
// again and patched into it: the patch cost 146 us of host time per token
// on llama-1b and 296 us on llama-8b, with the GPU idle (docs/BACKEND_CUDA.md).
// Host code with no CUDA header (tests/unit/test_cuda_graph_keys.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cuda/fusion.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

// Values a stream's device array holds (graph_submit.cpp uploads them).
constexpr size_t kDecodeFieldCapacity = 4096;

// FLASH_ATTN on the decode kernels takes kAttnFields values from its slot on.
enum AttnField : int32_t {
  kAttnKvLength,  // n_kv
  // The leading KV positions whose K and V rows the kernel may read before
  // its PDL wait (pdl.cuh): no node of the graph before it writes them and no
  // kernel of an earlier submit may still be running (0 otherwise).
  kAttnKvEarly,
  kAttnMaskEarly,  // 1: the mask may be read before the wait, on the same terms
  kAttnFields
};

struct DecodeFields {
  // Per node: the index of its (first) value in `values`, or -1 (the node's
  // fields are in its kernel arguments and in the graph key as usual).
  std::vector<int32_t> slot;
  // FLASH_ATTN on the decode kernels: AttnField's values. A CPY of a ROPE+KV
  // unit: its destination's byte offset in its buffer.
  std::vector<int64_t> values;
};

// Values past `capacity` (the device array's length) are not taken: then no
// node has a slot. `idle`: no kernel of an earlier submit can still be
// running on the stream (it was synchronized since its last submit).
DecodeFields plan_decode_fields(const pi_graph& g, const std::vector<Unit>& units, size_t capacity,
                                bool idle);

// What the nodes of g write into the buffers its decode attentions read,
// found in one pass over g: a scan of the graph per attention had cost 43 us
// per submit of a 32-layer stand-in graph on the CI machine, this about 11.
// `fa` below is the index of such an attention.
class AttnWrites {
 public:
  explicit AttnWrites(const pi_graph& g);
  // The leading positions of node fa's K and V views (src[1], src[2];
  // positions are dim 1) whose bytes no node before it writes.
  int64_t kv_rows_unwritten(uint32_t fa) const;
  // Whether a node before fa writes a byte of its mask (src[3]).
  bool mask_written(uint32_t fa) const;

 private:
  struct Mask {
    pi_tensor view;
    uint32_t first_writer;  // g.n_nodes: none
  };
  const pi_graph& g_;
  std::vector<pi_buffer> bufs_;                 // the attentions' K/V buffers, sorted
  std::vector<std::vector<uint32_t>> writers_;  // per bufs_ entry: its writers, in order
  std::vector<Mask> masks_;                     // the attentions' distinct masks
};

}  // namespace polyinfer::cuda
