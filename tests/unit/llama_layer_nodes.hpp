// A llama decode layer's attention nodes, for the planners' host-side tests
// (test_cuda_fusion.cpp, test_vk_fusion.cpp, test_cuda_graph_keys.cpp): Q, K
// and V products of the normed activations in slot 2, their ROPEs (K's
// output over Q in slot 3, which dies at ROPE Q: a layout the planners must
// order, tighter than the memory plan's, which keeps it apart)
// and the cache writes of the new K and V rows. Stand-in buffers
// (pi_node_builder.hpp); never run.
#pragma once

#include <cstdint>
#include <vector>

#include "pi_node_builder.hpp"

namespace polyinfer::test_graph {

constexpr int64_t kEmbd = 256, kD = 64, kHeads = 4, kKvHeads = 2;
// The V cache's offset in the cache buffer; one position's K (or V) F16 row.
constexpr uint64_t kVCacheOffset = 1 << 20;
constexpr uint64_t kCacheRowBytes = 2 * kD * kKvHeads;

// The attention norm of `tokens` tokens: ADD(input, residual in slot 9) into
// slot 0, RMS_NORM into slot 1, MUL by the weight row into slot 2 (what the
// Q, K and V products below read).
inline std::vector<pi_node> add_norm_mul_nodes(int64_t tokens) {
  const int64_t e = kEmbd;
  std::vector<pi_node> g;
  g.push_back(node(PI_OP_ADD, {tensor(kF32, kInputs, 64, {e, tokens}), slot(9, {e, tokens})},
                   slot(0, {e, tokens})));
  g.push_back(node(PI_OP_RMS_NORM, {slot(0, {e, tokens})}, slot(1, {e, tokens})));
  g.push_back(node(PI_OP_MUL, {slot(1, {e, tokens}), tensor(kF32, kWeights, 0, {e})},
                   slot(2, {e, tokens})));
  return g;
}

// `tokens` tokens written at cache byte offset `row` (K; V at kVCacheOffset + row).
inline std::vector<pi_node> qkv_rope_cache_nodes(int64_t tokens, uint64_t row) {
  const int64_t e = kEmbd, d = kD, h = kHeads, hkv = kKvHeads;
  const pi_tensor xn = slot(2, {e, tokens});
  std::vector<pi_node> g;
  g.push_back(
      node(PI_OP_MUL_MAT, {tensor(kQ4_0, kWeights, 4096, {e, e}), xn}, slot(3, {e, tokens})));
  g.push_back(
      node(PI_OP_MUL_MAT, {tensor(kQ4_0, kWeights, 65536, {e, 128}), xn}, slot(4, {128, tokens})));
  g.push_back(
      node(PI_OP_MUL_MAT, {tensor(kQ4_0, kWeights, 131072, {e, 128}), xn}, slot(5, {128, tokens})));
  g.push_back(stand_in_rope(slot(3, {d, h, tokens}), slot(6, {d, h, tokens}), d));
  g.push_back(stand_in_rope(slot(4, {d, hkv, tokens}), slot(3, {d, hkv, tokens}), d));
  g.push_back(
      node(PI_OP_CPY, {slot(3, {d, hkv, tokens})}, tensor(kF16, kCache, row, {d, hkv, tokens})));
  g.push_back(node(PI_OP_CPY, {slot(5, {d, hkv, tokens})},
                   tensor(kF16, kCache, kVCacheOffset + row, {d, hkv, tokens})));
  return g;
}

}  // namespace polyinfer::test_graph
