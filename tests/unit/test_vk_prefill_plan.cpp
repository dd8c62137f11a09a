// Which shaders the Vulkan backend's planner (src/backends/vulkan/vk_ops.cpp,
// host code) gives a prompt's products and attention. A product with more than
// 8 activation columns takes a GEMM: the
// cooperative-matrix shader (shaders/mul_mat_cm.comp: 128 weight rows x 64
// columns per workgroup, x 128 columns past 64) for F16 and block-type weights on a device with
// cooperative matrices, the float32 one (shaders/mul_mat_mm.comp: 64 x 64)
// for F32 and BF16 weights and on every other device. FLASH_ATTN over more
// than 8 query tokens with D = 32, 64 or 128 takes shaders/flash_attn_tiled.comp
// (a workgroup per 16 tokens and head) where the device has its 27 KB of shared
// memory, else flash_attn.comp (a workgroup per token and head); a decode
// attention (F16 or Q8_0 cache) splits a long cache over several workgroups
// per head (attn_decode_splits). Buffers are stand-in handles.
#include <gtest/gtest.h>

#include <string>

#include "backends/vulkan/vk_ops.hpp"
#include "pi_node_builder.hpp"
#include "polyinfer/dtype.hpp"

namespace polyinfer::vk {
namespace {

using test_graph::kArena;
using test_graph::kWeights;

// MUL_MAT of an [k, n, batches] weight of `type` with `cols` activation
// columns in 2 · batches batches (the weights broadcast).
pi_node product(GgmlType type, int64_t k, int64_t n, int64_t cols, int64_t batches = 1) {
  pi_tensor w = test_graph::tensor(0, kWeights, 0, {k, n, batches});
  w.type = static_cast<uint32_t>(type);
  w.nb[0] = traits(type).type_size;
  w.nb[1] = row_size(type, k);
  w.nb[2] = w.nb[1] * static_cast<uint64_t>(n);
  w.nb[3] = w.nb[2] * static_cast<uint64_t>(batches);
  const pi_tensor x = test_graph::tensor(0, kArena, 0, {k, cols, 2 * batches});
  const pi_tensor d = test_graph::tensor(0, kArena, 1 << 24, {n, cols, 2 * batches});
  return test_graph::node(PI_OP_MUL_MAT, {w, x}, d);
}

// FLASH_ATTN of `tokens` queries of head size d over 300 F16 cache positions,
// 8 query heads on 2 KV heads, with a causal mask.
pi_node attention(int64_t d, int64_t tokens) {
  const pi_tensor q = test_graph::tensor(0, kArena, 0, {d, tokens, 8});
  pi_tensor k = test_graph::tensor(0, kWeights, 0, {d, 300, 2});
  k.type = static_cast<uint32_t>(GgmlType::F16);
  k.nb[0] = 2;
  k.nb[1] = 2 * static_cast<uint64_t>(d);
  k.nb[2] = k.nb[1] * 300;
  k.nb[3] = k.nb[2] * 2;
  pi_tensor v = k;
  v.offset = 1 << 22;
  const pi_tensor mask = test_graph::tensor(0, kArena, 1 << 22, {300, tokens});
  const pi_tensor out = test_graph::tensor(0, kArena, 1 << 23, {d, 8, tokens});
  return test_graph::node(PI_OP_FLASH_ATTN, {q, k, v, mask}, out);
}

Features with_coopmat(bool on) {
  Features f;
  f.subgroup_arith = true;
  f.subgroup_size = 32;
  f.int_dot = true;
  f.coopmat = on;
  f.max_shared = 49152;
  return f;
}

OpPlan plan(const pi_node& n, const Features& f) {
  OpPlan p;
  std::string why;
  EXPECT_TRUE(plan_node(n, f, &p, &why)) << why;
  return p;
}

TEST(VkPrefillPlan, CooperativeMatricesTakeF16AndBlockWeights) {
  for (GgmlType t : {GgmlType::F16, GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q4_K, GgmlType::Q5_K,
                     GgmlType::Q6_K}) {
    // 300 rows: 3 tiles of 128; 64 columns: one tile of 64; 2 batches.
    const OpPlan p = plan(product(t, 512, 300, 64), with_coopmat(true));
    EXPECT_STREQ(p.shader, "mul_mat_cm") << type_name(t);
    EXPECT_EQ(p.spec[0], static_cast<uint32_t>(t)) << type_name(t);
    EXPECT_EQ(p.groups, 3u * 1u * 2u) << type_name(t);
    // 200 columns: 2 tiles of 128.
    const OpPlan wide = plan(product(t, 512, 300, 200), with_coopmat(true));
    EXPECT_STREQ(wide.shader, "mul_mat_cm_n128") << type_name(t);
    EXPECT_EQ(wide.spec[0], static_cast<uint32_t>(t)) << type_name(t);
    EXPECT_EQ(wide.groups, 3u * 2u * 2u) << type_name(t);
  }
}

TEST(VkPrefillPlan, F32AndBf16WeightsKeepTheFloat32Gemm) {
  for (GgmlType t : {GgmlType::F32, GgmlType::BF16}) {
    const OpPlan p = plan(product(t, 512, 300, 70), with_coopmat(true));
    EXPECT_STREQ(p.shader, "mul_mat_mm") << type_name(t);
    EXPECT_EQ(p.groups, 5u * 2u * 2u) << type_name(t);  // 64 x 64 tiles
  }
}

TEST(VkPrefillPlan, WithoutCooperativeMatricesEveryTypeTakesTheFloat32Gemm) {
  const OpPlan p = plan(product(GgmlType::Q4_K, 512, 300, 70), with_coopmat(false));
  EXPECT_STREQ(p.shader, "mul_mat_mm");
  EXPECT_EQ(p.groups, 5u * 2u * 2u);
}

TEST(VkPrefillPlan, DecodeColumnsStayMatrixVector) {
  const OpPlan p = plan(product(GgmlType::Q4_K, 512, 300, 8), with_coopmat(true));
  EXPECT_NE(std::string(p.shader).rfind("mul_mat_vec", 0), std::string::npos) << p.shader;
}

TEST(VkPrefillPlan, PromptAttentionTakesTheTiledShader) {
  for (int64_t d : {32, 64, 128}) {
    const OpPlan p = plan(attention(d, 80), with_coopmat(false));
    EXPECT_STREQ(p.shader, "flash_attn_tiled") << "D " << d;
    EXPECT_EQ(p.groups, 5u * 8u) << "D " << d;  // 80 tokens: 5 blocks of 16, 8 heads
  }
  const OpPlan nine = plan(attention(64, 9), with_coopmat(false));
  EXPECT_STREQ(nine.shader, "flash_attn_tiled");
  EXPECT_EQ(nine.groups, 1u * 8u);
}

TEST(VkPrefillPlan, OtherAttentionTakesAWorkgroupPerTokenAndHead) {
  // Decode-sized, a head size that does not divide 128, one above 128, too
  // little shared memory.
  EXPECT_STREQ(plan(attention(64, 8), with_coopmat(false)).shader, "flash_attn");
  const OpPlan d80 = plan(attention(80, 80), with_coopmat(false));
  EXPECT_STREQ(d80.shader, "flash_attn");
  EXPECT_EQ(d80.groups, 80u * 8u);
  EXPECT_STREQ(plan(attention(256, 80), with_coopmat(false)).shader, "flash_attn");
  Features small = with_coopmat(false);
  small.max_shared = 16384;
  EXPECT_STREQ(plan(attention(128, 80), small).shader, "flash_attn");
}

TEST(VkAttentionPlan, DecodeAttentionSplitsALongCache) {
  // One workgroup per (token, head) up to 128 positions, then the power of two
  // at or above n_kv / 128, capped at 256 workgroups in all and 16 per head.
  EXPECT_EQ(attn_decode_splits(1, 32, 1), 1u);
  EXPECT_EQ(attn_decode_splits(1, 32, 128), 1u);
  EXPECT_EQ(attn_decode_splits(1, 32, 129), 2u);
  EXPECT_EQ(attn_decode_splits(1, 32, 300), 4u);
  EXPECT_EQ(attn_decode_splits(1, 32, 1024), 8u);
  EXPECT_EQ(attn_decode_splits(1, 32, 16384), 8u);  // 32 heads x 8 = 256
  EXPECT_EQ(attn_decode_splits(1, 8, 16384), 16u);  // 16 at most
  EXPECT_EQ(attn_decode_splits(8, 64, 16384), 1u);  // 512 rows already
  EXPECT_EQ(attn_decode_splits(3, 32, 4096), 2u);   // 96 rows: 256 / 96 -> 2
  // The planner carries it (p_u(1) of flash_attn_vec.comp), so a decode step's
  // plan changes when the cache passes 128, 256, 512 ... positions.
  EXPECT_EQ(plan(attention(64, 1), with_coopmat(false)).extra[1], 4u);  // 300 positions
  // Only where the vector kernel may run: a prompt, D = 36, or a Q8_0 cache
  // whose D is not a whole number of blocks never splits; an F32 cache neither.
  EXPECT_EQ(attn_node_splits(attention(64, 80)), 1u);
  EXPECT_EQ(attn_node_splits(attention(36, 1)), 1u);
  EXPECT_EQ(attn_node_splits(attention(128, 2)), 4u);
  auto with_cache = [](pi_node n, GgmlType t) {
    n.src[1].type = n.src[2].type = static_cast<uint32_t>(t);
    return n;
  };
  EXPECT_EQ(attn_node_splits(with_cache(attention(64, 1), GgmlType::Q8_0)), 4u);
  EXPECT_EQ(attn_node_splits(with_cache(attention(40, 1), GgmlType::Q8_0)), 1u);
  EXPECT_EQ(attn_node_splits(with_cache(attention(64, 1), GgmlType::F32)), 1u);
  // The rows' alignment the vector kernel needs: 16-byte pieces of F16, even
  // bytes for Q8_0's blocks.
  EXPECT_EQ(attn_vec_alignment(attention(64, 1)), 16u);
  EXPECT_EQ(attn_vec_alignment(with_cache(attention(64, 1), GgmlType::Q8_0)), 2u);
}

}  // namespace
}  // namespace polyinfer::vk
