// A plugin-ABI node from its op, sources and destination: the graphs that
// tests/conformance/test_decode_graph.cpp runs and the fusion planners' tests
// (tests/unit/test_cuda_fusion.cpp, test_vk_fusion.cpp) plan are built node by
// node from these; the planners' tests also take their tensors from here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "polyinfer/backend/abi.h"

namespace polyinfer::test_graph {

// GGUF type codes of the stand-in tensors.
constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14,
                   kI32 = 26;

// srcs: at most PI_MAX_SRC tensors, in the op's source order (include/polyinfer/backend/abi.h).
inline pi_node node(pi_op op, std::initializer_list<pi_tensor> srcs, const pi_tensor& dst) {
  pi_node n{};
  n.op = op;
  n.n_src = static_cast<uint32_t>(srcs.size());
  std::copy(srcs.begin(), srcs.end(), n.src);
  n.dst = dst;
  return n;
}

// Stand-in buffer handles for graphs that are planned, never run (a planner
// compares handles and never dereferences them): the arena of
// intermediates, the weights, the KV cache, the inputs.
inline char g_stand_in[4];
inline const pi_buffer kArena = reinterpret_cast<pi_buffer>(&g_stand_in[0]);
inline const pi_buffer kWeights = reinterpret_cast<pi_buffer>(&g_stand_in[1]);
inline const pi_buffer kCache = reinterpret_cast<pi_buffer>(&g_stand_in[2]);
inline const pi_buffer kInputs = reinterpret_cast<pi_buffer>(&g_stand_in[3]);

// A contiguous tensor of GGUF type `type`: F32 (0), F16 (1), or blocks of 32
// values, Q4_0 (2: 18 bytes) and Q8_0 (8: 34 bytes); ne in ggml order.
inline pi_tensor tensor(uint32_t type, pi_buffer b, uint64_t offset,
                        std::initializer_list<int64_t> ne) {
  pi_tensor t{};
  t.type = type;
  std::fill(t.ne, t.ne + 4, 1);
  std::copy(ne.begin(), ne.end(), t.ne);
  const uint64_t block = type == kQ4_0 ? 18 : type == kQ8_0 ? 34 : 0;
  t.nb[0] = block ? block : type == kF16 ? 2 : 4;
  t.nb[1] = block ? block * static_cast<uint64_t>(t.ne[0] / 32) : t.nb[0] * t.ne[0];
  for (int d = 2; d < 4; ++d) t.nb[d] = t.nb[d - 1] * static_cast<uint64_t>(t.ne[d - 1]);
  t.buffer = b;
  t.offset = offset;
  return t;
}

// A float32 intermediate in arena slot s (16 KB each).
inline pi_tensor slot(int s, std::initializer_list<int64_t> ne) {
  return tensor(0, kArena, 16384 * static_cast<uint64_t>(s), ne);
}

// A ROPE node (normal mode, base 10000, no scaling) over heads of head_dim
// values, its positions a stand-in I32 input.
inline pi_node stand_in_rope(const pi_tensor& x, const pi_tensor& dst, int32_t head_dim) {
  pi_node n = node(PI_OP_ROPE, {x, tensor(kI32, kInputs, 0, {1}), pi_tensor{}}, dst);
  n.i[1] = head_dim;
  n.f[0] = 10000.0f;
  n.f[1] = 1.0f;
  return n;
}

// A llama ROPE node (normal mode, every dimension of the head_dim-value
// heads rotated, base 10000, no scaling, YaRN's beta_fast 32 and beta_slow 1
// over a 4,096-position training context) over real positions `pos`.
inline pi_node llama_rope(const pi_tensor& x, const pi_tensor& pos, const pi_tensor& dst,
                          int32_t head_dim) {
  pi_node n = node(PI_OP_ROPE, {x, pos, pi_tensor{}}, dst);
  n.i[0] = 0;
  n.i[1] = head_dim;
  n.i[2] = 4096;
  n.f[0] = 10000.0f;  // base
  n.f[1] = 1.0f;      // freq_scale
  n.f[3] = 1.0f;      // attn_factor
  n.f[4] = 32.0f;     // beta_fast
  n.f[5] = 1.0f;      // beta_slow
  return n;
}

}  // namespace polyinfer::test_graph
