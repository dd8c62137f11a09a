// Which GEMM the Vulkan backend's planner (src/backends/vulkan/vk_ops.cpp,
// host code) gives a prefill product (more than 8 activation columns): the
// cooperative-matrix shader (shaders/mul_mat_cm.comp: 128 weight rows x 64
// columns per workgroup, x 128 columns past 64) for F16 and block-type weights on a device with
// cooperative matrices, the float32 one (shaders/mul_mat_mm.comp: 64 x 64)
// for F32 and BF16 weights and on every other device. Buffers are stand-in
// handles.
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

TEST(VkGemmPlan, CooperativeMatricesTakeF16AndBlockWeights) {
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

TEST(VkGemmPlan, F32AndBf16WeightsKeepTheFloat32Gemm) {
  for (GgmlType t : {GgmlType::F32, GgmlType::BF16}) {
    const OpPlan p = plan(product(t, 512, 300, 70), with_coopmat(true));
    EXPECT_STREQ(p.shader, "mul_mat_mm") << type_name(t);
    EXPECT_EQ(p.groups, 5u * 2u * 2u) << type_name(t);  // 64 x 64 tiles
  }
}

TEST(VkGemmPlan, WithoutCooperativeMatricesEveryTypeTakesTheFloat32Gemm) {
  const OpPlan p = plan(product(GgmlType::Q4_K, 512, 300, 70), with_coopmat(false));
  EXPECT_STREQ(p.shader, "mul_mat_mm");
  EXPECT_EQ(p.groups, 5u * 2u * 2u);
}

TEST(VkGemmPlan, DecodeColumnsStayMatrixVector) {
  const OpPlan p = plan(product(GgmlType::Q4_K, 512, 300, 8), with_coopmat(true));
  EXPECT_NE(std::string(p.shader).rfind("mul_mat_vec", 0), std::string::npos) << p.shader;
}

}  // namespace
}  // namespace polyinfer::vk
