// What a backend's fusion planner asks of nodes' tensors before it runs them
// in one launch: host code over pi_tensor only (no device header), shared by
// the CUDA planner (backends/cuda/fusion.cpp) and the Vulkan one
// (backends/vulkan/vk_fusion.cpp). Buffers are compared by handle: a
// pi_buffer is one allocation of its backend, so tensors of different
// handles never share bytes, and within one graph equal handles are the same
// memory (the plan is a function of what the graph caches key on).
#pragma once

#include <cstdint>
#include <cstring>

#include "polyinfer/backend/abi.h"

namespace polyinfer::fusion {

// The same view: buffer, offset, type, shape and strides.
inline bool same_tensor(const pi_tensor& a, const pi_tensor& b) {
  return a.buffer == b.buffer && a.offset == b.offset && a.type == b.type &&
         std::memcmp(a.ne, b.ne, sizeof a.ne) == 0 && std::memcmp(a.nb, b.nb, sizeof a.nb) == 0;
}

// One past the last byte a tensor may touch in its buffer (bounds from the
// strides; the last element counted as at least 4 bytes, as block types'
// rows are).
inline uint64_t byte_end(const pi_tensor& t) {
  uint64_t e = t.offset + (t.nb[0] > 4 ? t.nb[0] : 4);
  for (int d = 0; d < 4; ++d) e += static_cast<uint64_t>(t.ne[d] - 1) * t.nb[d];
  return e;
}

// Whether two tensors may share bytes (byte_end's bounds).
inline bool overlap(const pi_tensor& a, const pi_tensor& b) {
  if (a.buffer == nullptr || a.buffer != b.buffer) return false;
  return a.offset < byte_end(b) && b.offset < byte_end(a);
}

// Neither node reads what the other writes, nor do they write the same bytes:
// both may run in one launch in any order. (The memory plan may give the
// second node's output the bytes of an input that dies at the first.)
inline bool independent(const pi_node& a, const pi_node& b) {
  for (int j = 0; j < PI_MAX_SRC; ++j) {
    if (overlap(b.src[j], a.dst) || overlap(a.src[j], b.dst)) return false;
  }
  return !overlap(a.dst, b.dst);
}

}  // namespace polyinfer::fusion
