// The CUDA graph cache's keys (src/backends/cuda/graph_keys.cpp) and the
// per-token fields they leave out (decode_fields.cpp), which are host code:
// two decode steps at consecutive positions must share one key (one CUDA
// graph replays) and differ only in the uploaded values, while any other
// change, or a plan without those fields, must change the key.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/decode_fields.hpp"
#include "backends/cuda/fusion.hpp"
#include "backends/cuda/graph_keys.hpp"
#include "llama_layer_nodes.hpp"
#include "pi_node_builder.hpp"

namespace polyinfer::cuda {
namespace {

using namespace test_graph;  // stand-in tensors, type codes, the layer's shapes

constexpr uint64_t kRow = kCacheRowBytes, kVCache = kVCacheOffset;

// [D, n_kv, Hkv] over a cache laid out [D, Hkv, position].
pi_tensor cache_view(uint64_t offset, int64_t n_kv) {
  pi_tensor t = tensor(kF16, kCache, offset, {kD, n_kv, kKvHeads});
  t.nb[1] = kRow;
  t.nb[2] = 2 * kD;
  return t;
}

// A llama decode step of `tokens` tokens ending at position n_kv - 1: Q, K,
// V, their ROPEs and cache writes, the attention and the O projection.
std::vector<pi_node> step(int64_t n_kv, int64_t tokens = 1) {
  const int64_t e = kEmbd;
  std::vector<pi_node> g =
      qkv_rope_cache_nodes(tokens, static_cast<uint64_t>(n_kv - tokens) * kRow);
  pi_tensor q = slot(6, {kD, tokens, kHeads});  // llama's view of Q: [D, T, H]
  q.nb[1] = 4 * e;
  q.nb[2] = 4 * kD;
  g.push_back(node(PI_OP_FLASH_ATTN,
                   {q, cache_view(0, n_kv), cache_view(kVCache, n_kv),
                    tensor(kF32, kInputs, 128, {n_kv, tokens})},
                   slot(7, {kD, kHeads, tokens})));
  g.push_back(node(PI_OP_MUL_MAT, {tensor(kQ4_0, kWeights, 4096, {e, e}), slot(7, {e, tokens})},
                   slot(8, {e, tokens})));
  return g;
}

uint64_t stand_in_address(pi_buffer b) {
  return reinterpret_cast<uintptr_t>(b);
}

struct Planned {
  DecodeFields fields;
  GraphKeys keys;
};

Planned plan(const std::vector<pi_node>& nodes, bool fuse = true, size_t capacity = 64,
             bool idle = true) {
  const pi_graph g{nodes.data(), static_cast<uint32_t>(nodes.size())};
  const std::vector<Unit> units = plan_units(g, fuse);
  Planned p;
  p.fields = plan_decode_fields(g, units, capacity, idle);
  p.keys = graph_keys(g, units, p.fields, stand_in_address);
  return p;
}

TEST(CudaGraphKeys, DecodeStepsShareOneKey) {
  const Planned a = plan(step(40)), b = plan(step(41));
  // The ROPE+KV unit's cache writes (nodes 5, 6) and the attention (node 7).
  EXPECT_EQ(a.fields.slot, (std::vector<int32_t>{-1, -1, -1, -1, -1, 0, 1, 2, -1}));
  // The attention's n_kv, the rows it reads before its wait (all but the
  // new token's and, by fusion::byte_end's 4-byte last element, the one
  // before it) and its mask's flag (no node writes it).
  EXPECT_EQ(a.fields.values, (std::vector<int64_t>{39 * kRow, kVCache + 39 * kRow, 40, 38, 1}));
  EXPECT_EQ(b.fields.values, (std::vector<int64_t>{40 * kRow, kVCache + 40 * kRow, 41, 39, 1}));
  EXPECT_EQ(a.keys.topology, b.keys.topology);
  EXPECT_EQ(a.keys.full, b.keys.full);
  EXPECT_EQ(a.keys.node_end, b.keys.node_end);
}

// Nothing is read before the wait while a kernel of an earlier submit may
// still run, nor what a node of the graph before the attention writes.
TEST(CudaGraphKeys, EarlyReadsOnlyOfWhatNothingWrites) {
  EXPECT_EQ(plan(step(40), true, 64, false).fields.values,
            (std::vector<int64_t>{39 * kRow, kVCache + 39 * kRow, 40, 0, 0}));
  std::vector<pi_node> masked = step(40);
  masked[0].dst = masked[7].src[3];  // a node writes the mask
  EXPECT_EQ(plan(masked).fields.values[4], 0);
  std::vector<pi_node> nodes = step(40);
  const pi_graph g{nodes.data(), static_cast<uint32_t>(nodes.size())};
  EXPECT_EQ(AttnWrites(g).kv_rows_unwritten(7), 38);
  nodes[5].dst.offset = 12 * kRow + 4;  // K's write inside position 12
  EXPECT_EQ(AttnWrites(g).kv_rows_unwritten(7), 12);
  nodes[6].dst.offset = kVCache + 3 * kRow + 8;  // V's write from inside position 3 on
  EXPECT_EQ(AttnWrites(g).kv_rows_unwritten(7), 3);
  nodes[5].dst.offset = kVCache + 40 * kRow + 4;  // past both views
  nodes[6].dst.offset = 40 * kRow + 4;
  EXPECT_EQ(AttnWrites(g).kv_rows_unwritten(7), 40);
  nodes[8].dst = nodes[7].src[1];  // a node after the attention writes K
  EXPECT_EQ(AttnWrites(g).kv_rows_unwritten(7), 40);
}

// Past 256 positions the attention's grid is one block per 32 positions: a
// new block is a new graph, positions within a block are not.
TEST(CudaGraphKeys, AttentionGridChangesTheKey) {
  EXPECT_EQ(plan(step(200)).keys.full, plan(step(256)).keys.full);
  EXPECT_NE(plan(step(256)).keys.full, plan(step(257)).keys.full);
  EXPECT_EQ(plan(step(257)).keys.full, plan(step(288)).keys.full);
  EXPECT_NE(plan(step(288)).keys.full, plan(step(289)).keys.full);
}

TEST(CudaGraphKeys, OtherChangesChangeTheKey) {
  const Planned a = plan(step(40));
  std::vector<pi_node> moved = step(40);
  moved[8].src[0].offset += 4096;  // another weight
  EXPECT_NE(plan(moved).keys.full, a.keys.full);
  std::vector<pi_node> scaled = step(40);
  scaled[7].f[0] = 0.5f;  // the attention's scale
  EXPECT_NE(plan(scaled).keys.full, a.keys.full);
  std::vector<pi_node> q_moved = step(40);
  q_moved[7].src[0].offset += 16384;  // Q elsewhere, same shape
  EXPECT_NE(plan(q_moved).keys.full, a.keys.full);
  std::vector<pi_node> mask_moved = step(40);
  mask_moved[7].src[3].offset += 256;  // the mask elsewhere
  EXPECT_NE(plan(mask_moved).keys.full, a.keys.full);
}

// With fusion off the cache writes are plain CPYs whose offsets stay in the
// key (they are patched); the attention's length still goes by value. With
// no room for the values, nothing does.
TEST(CudaGraphKeys, FieldsOnlyWhereTheKernelsReadThem) {
  const Planned a = plan(step(40), false), b = plan(step(41), false);
  EXPECT_EQ(a.fields.slot, (std::vector<int32_t>{-1, -1, -1, -1, -1, -1, -1, 0, -1}));
  EXPECT_NE(a.keys.full, b.keys.full);
  const Planned c = plan(step(40), true, 2), d = plan(step(41), true, 2);
  EXPECT_TRUE(c.fields.values.empty());
  EXPECT_EQ(c.fields.slot, std::vector<int32_t>(9, -1));
  EXPECT_NE(c.keys.full, d.keys.full);
}

// Units are part of the key: the same nodes cut otherwise launch other kernels.
TEST(CudaGraphKeys, UnitsArePartOfTheKey) {
  const std::vector<pi_node> nodes = step(40);
  const pi_graph g{nodes.data(), static_cast<uint32_t>(nodes.size())};
  const DecodeFields none{std::vector<int32_t>(nodes.size(), -1), {}};
  EXPECT_NE(graph_keys(g, plan_units(g, true), none, stand_in_address).full,
            graph_keys(g, plan_units(g, false), none, stand_in_address).full);
}

// Prefill (three tokens): neither the attention nor the paired cache writes
// take per-token fields.
TEST(CudaGraphKeys, PrefillHasNoFields) {
  const Planned p = plan(step(40, 3));
  EXPECT_TRUE(p.fields.values.empty());
  EXPECT_NE(p.keys.full, plan(step(41, 3)).keys.full);
}

}  // namespace
}  // namespace polyinfer::cuda
