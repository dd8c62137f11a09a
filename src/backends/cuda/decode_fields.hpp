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

// The leading positions of FLASH_ATTN node `fa`'s K and V views (src[1],
// src[2]; positions are dim 1) whose bytes no node before it in g writes.
int64_t kv_rows_unwritten(const pi_graph& g, uint32_t fa);

}  // namespace polyinfer::cuda
