// Which shader the Vulkan backend's matrix-vector planner
// (src/backends/vulkan/vk_matvec_plan.cpp, host code) gives a decode product,
// and with which specialization constants: the direct kernel
// (shaders/mul_mat_vec_direct.comp) for Q4_0, Q4_K and Q6_K rows that read
// 8-bit codes and start where its word loads need them to, the F16 kernel
// (shaders/mul_mat_vec_f16.comp) for 16-byte aligned F16 rows, the staged
// kernel for the rest. Buffers are stand-in handles.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>

#include "backends/vulkan/vk_matvec_plan.hpp"
#include "pi_node_builder.hpp"
#include "polyinfer/dtype.hpp"

namespace polyinfer::vk {
namespace {

using test_graph::kArena;
using test_graph::kWeights;

constexpr uint32_t kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14;

// MUL_MAT of an [k, n] weight at `offset` (rows `pad` bytes apart beyond
// their size) with `cols` activation columns in `batches` batches.
pi_node product(uint32_t type, int64_t k, int64_t n, uint64_t offset, uint64_t pad = 0,
                int64_t cols = 1, int64_t batches = 1) {
  pi_tensor w{};
  w.type = type;
  w.ne[0] = k;
  w.ne[1] = n;
  w.ne[2] = batches;
  w.ne[3] = 1;
  w.nb[0] = traits(static_cast<GgmlType>(type)).type_size;
  w.nb[1] = row_size(static_cast<GgmlType>(type), k) + pad;
  w.nb[2] = w.nb[1] * static_cast<uint64_t>(n);
  w.nb[3] = w.nb[2] * static_cast<uint64_t>(batches);
  w.buffer = kWeights;
  w.offset = offset;
  const pi_tensor x = test_graph::tensor(0, kArena, 0, {k, cols, batches});
  const pi_tensor d = test_graph::tensor(0, kArena, 1 << 20, {n, cols, batches});
  return test_graph::node(PI_OP_MUL_MAT, {w, x}, d);
}

Features nvidia_like() {
  Features f;
  f.subgroup_arith = true;
  f.subgroup_size = 32;
  f.int_dot = true;
  f.fusion = true;
  f.prequant = true;
  f.max_shared = 49152;
  return f;
}

OpPlan plan(const pi_node& n, bool codes, const Features& f = nvidia_like()) {
  OpPlan p;
  plan_matvec_codes(n, f, codes, &p);
  return p;
}

bool starts_with(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

TEST(VkMatvecPlan, DirectForQ4_0Q4_KQ6_KThatReadCodes) {
  struct Want {
    uint32_t type, rows, pieces;
  };
  for (const Want w : {Want{kQ4_0, 4, 0}, Want{kQ4_K, 1, 1}, Want{kQ6_K, 1, 0}}) {
    SCOPED_TRACE(w.type);
    const OpPlan p = plan(product(w.type, 4096, 14336, 0), true);
    EXPECT_STREQ(p.shader, "mul_mat_vec_direct_subgroup");
    EXPECT_EQ(p.spec[0], w.type);
    EXPECT_EQ(p.spec[1], 1u);   // columns
    EXPECT_EQ(p.spec[3], 64u);  // invocations: 128 or 64 items a row, at most 64
    EXPECT_EQ(p.spec[4], w.rows);
    EXPECT_EQ(p.spec[5], w.pieces);  // Q4_K rows 16-byte aligned: 3 uvec4s an item
    EXPECT_EQ(p.groups, 14336u / w.rows);
  }
}

// Q4_K rows four per workgroup in one-column products of 4,096 to 8,192 rows
// (llama-8b's Q), whose ROPE pairs then lie in one workgroup; one elsewhere
// (llama-1b's Q, K and V, the output projections, several columns).
TEST(VkMatvecPlan, DirectQ4_KRowsFourInOneColumnProductsOf4096To8192Rows) {
  for (const int64_t n : {4096, 4099, 8192}) {
    const pi_node p = product(kQ4_K, 4096, n, 0);
    EXPECT_EQ(plan(p, true).spec[4], 4u) << n;
    EXPECT_TRUE(matvec_direct_pairs(p)) << n;
  }
  for (const int64_t n : {1024, 2048, 8448, 32000}) {
    const pi_node p = product(kQ4_K, 4096, n, 0);
    EXPECT_EQ(plan(p, true).spec[4], 1u) << n;
    EXPECT_FALSE(matvec_direct_pairs(p)) << n;
  }
  EXPECT_EQ(plan(product(kQ4_K, 4096, 4096, 0, 0, 2), true).spec[4], 1u);  // two columns
  EXPECT_EQ(plan(product(kQ6_K, 4096, 4096, 0), true).spec[4], 1u);
}

// A product's weight type and rows, and the rows per workgroup wanted.
struct Rows {
  uint32_t type;
  int64_t n;
  uint32_t rows;
};

// The norm-block module (Unit::norm): K-quant rows two per workgroup from
// 4,096 rows up (llama-8b's O and down products), one below (llama-1b's);
// Q4_0 rows two, also where the plain module takes four.
// Q4_0 rows four per workgroup from 8,192 rows of one column (llama-8b's
// gate and up), else two.
TEST(VkMatvecPlan, DirectQ4_0RowsFourInWideOneColumnProducts) {
  EXPECT_EQ(plan(product(kQ4_0, 4096, 8192, 0), true).spec[4], 4u);
  EXPECT_EQ(plan(product(kQ4_0, 4096, 8190, 0), true).spec[4], 2u);
  EXPECT_EQ(plan(product(kQ4_0, 4096, 14336, 0, 0, 2), true).spec[4], 2u);  // two columns
  EXPECT_EQ(plan(product(kQ4_0, 4096, 8195, 0), true).groups, 2049u);
}

TEST(VkMatvecPlan, NormBlocksTakeTwoKQuantRowsFromFourThousandRows) {
  for (const Rows w :
       {Rows{kQ4_K, 4096, 2}, Rows{kQ6_K, 4096, 2}, Rows{kQ4_K, 2048, 1}, Rows{kQ6_K, 2048, 1},
        Rows{kQ4_0, 4096, 2}, Rows{kQ4_0, 2048, 2}, Rows{kQ4_0, 8192, 2}}) {
    SCOPED_TRACE(testing::Message() << w.type << " " << w.n);
    const pi_node n = product(w.type, 4096, w.n, 0);
    OpPlan p = plan(n, true);
    plan_matvec_norm_tail(n, &p);
    EXPECT_STREQ(p.shader, "mul_mat_vec_direct_norm");
    EXPECT_EQ(p.spec[4], w.rows);
    EXPECT_EQ(p.groups, static_cast<uint64_t>(w.n) / w.rows);
  }
}

// The gate-and-up module (Unit::swiglu): Q4_0 rows four per workgroup,
// K-quant rows two (four past 8,192 rows), twice the workgroups (gate and up
// alternating).
TEST(VkMatvecPlan, SwigluBlocksRunBothProductsFourQ4_0RowsOrTwoToFourKQuantRows) {
  for (const Rows w : {Rows{kQ4_0, 8192, 4}, Rows{kQ4_0, 544, 4}, Rows{kQ4_K, 8192, 2},
                       Rows{kQ6_K, 544, 2}, Rows{kQ4_K, 14336, 4}, Rows{kQ6_K, 8224, 4}}) {
    SCOPED_TRACE(testing::Message() << w.type << " " << w.n);
    const pi_node gate = product(w.type, 2048, w.n, 0);
    OpPlan p = plan(gate, true);
    plan_matvec_swiglu_tail(gate, &p);
    EXPECT_STREQ(p.shader, "mul_mat_vec_direct_swiglu");
    EXPECT_EQ(p.spec[4], w.rows);
    EXPECT_EQ(p.groups, 2 * static_cast<uint64_t>(w.n) / w.rows);  // each product's row groups
  }
}

// Q6_K and Q4_0 direct products of one column (plain, norm-block and epilogue
// modules alike) load their activation blocks with the weights (spec constant 9);
// other types, more columns and the staged kernel keep their constants.
TEST(VkMatvecPlan, EarlyActivationLoadsForQ6_KAndQ4_0DirectRowsOnly) {
  for (const uint32_t type : {kQ4_0, kQ4_K, kQ6_K}) {
    SCOPED_TRACE(type);
    const pi_node n = product(type, 4096, 4096, 0);
    OpPlan plain = plan(n, true), norm = plan(n, true), rope = plan(n, true);
    plan_matvec_norm_tail(n, &norm);
    plan_matvec_epilogue(true, 1, &rope);
    for (OpPlan* p : {&plain, &norm, &rope}) {
      const uint32_t n_spec = p->n_spec;
      plan_matvec_early_acts(n, p);
      const bool early = type == kQ6_K || type == kQ4_0;
      EXPECT_EQ(p->spec[9], early ? 1u : 0u);
      EXPECT_EQ(p->n_spec, early ? 10u : n_spec);
    }
  }
  for (const auto& [n, codes] : {std::pair{product(kQ6_K, 4096, 4096, 0), false},
                                 std::pair{product(kQ6_K, 4096, 4096, 0, 0, 2), true}}) {
    OpPlan p = plan(n, codes);
    const OpPlan before = p;
    plan_matvec_early_acts(n, &p);
    EXPECT_EQ(p.spec, before.spec);
    EXPECT_EQ(p.n_spec, before.n_spec);
  }
}

TEST(VkMatvecPlan, DirectWorkgroupHoldsTheRowsItems) {
  // llama-1b's Q4_K rows of 2,048 values are 32 items: 32 invocations, not 64.
  EXPECT_EQ(plan(product(kQ4_K, 2048, 512, 0), true).spec[3], 32u);
  EXPECT_EQ(plan(product(kQ4_0, 2048, 512, 0), true).spec[3], 64u);
  // Fewer items than 32 still take a whole subgroup.
  EXPECT_EQ(plan(product(kQ4_K, 512, 64, 0), true).spec[3], 32u);
}

TEST(VkMatvecPlan, WithoutCodesTheStagedKernel) {
  for (uint32_t type : {kQ4_0, kQ4_K, kQ6_K}) {
    SCOPED_TRACE(type);
    EXPECT_TRUE(
        starts_with(plan(product(type, 4096, 4096, 0), false).shader, "mul_mat_vec_staged_dot"));
    Features no_dot = nvidia_like();
    no_dot.int_dot = false;  // codes asked for, but no 8-bit activations
    EXPECT_TRUE(
        starts_with(plan(product(type, 4096, 4096, 0), true, no_dot).shader, "mul_mat_vec_staged"));
    EXPECT_FALSE(starts_with(plan(product(type, 4096, 4096, 0), true, no_dot).shader,
                             "mul_mat_vec_staged_dot"));
  }
}

TEST(VkMatvecPlan, OtherTypesStayStaged) {
  EXPECT_STREQ(plan(product(kQ5_K, 4096, 4096, 0), true).shader,
               "mul_mat_vec_staged_dotq_subgroup");
  // Q8_0 keeps float activations (vk_matvec_plan.cpp says why).
  EXPECT_STREQ(plan(product(kQ8_0, 4096, 4096, 0), true).shader, "mul_mat_vec_staged_subgroup");
}

TEST(VkMatvecPlan, RowsWhereTheWordLoadsDoNotFitStayStaged) {
  // Q4_0 and Q6_K rows must start at an even byte, Q4_K rows at a word.
  EXPECT_STRNE(plan(product(kQ4_0, 4096, 64, 1), true).shader, "mul_mat_vec_direct_subgroup");
  EXPECT_STRNE(plan(product(kQ6_K, 4096, 64, 0, 1), true).shader, "mul_mat_vec_direct_subgroup");
  EXPECT_STRNE(plan(product(kQ4_K, 4096, 64, 2), true).shader, "mul_mat_vec_direct_subgroup");
  EXPECT_STRNE(plan(product(kQ4_K, 4096, 64, 0, 2), true).shader, "mul_mat_vec_direct_subgroup");
  EXPECT_STREQ(plan(product(kQ4_0, 4096, 64, 2), true).shader, "mul_mat_vec_direct_subgroup");
  EXPECT_STREQ(plan(product(kQ6_K, 4096, 64, 0, 2), true).shader, "mul_mat_vec_direct_subgroup");
}

TEST(VkMatvecPlan, Q4_KInPiecesOnlyWhenSixteenByteAligned) {
  EXPECT_EQ(plan(product(kQ4_K, 4096, 64, 32), true).spec[5], 1u);
  EXPECT_EQ(plan(product(kQ4_K, 4096, 64, 4), true).spec[5], 0u);
  EXPECT_EQ(plan(product(kQ4_K, 4096, 64, 0, 4), true).spec[5], 0u);
  EXPECT_STREQ(plan(product(kQ4_K, 4096, 64, 4), true).shader, "mul_mat_vec_direct_subgroup");
}

TEST(VkMatvecPlan, BatchesAndTwoColumns) {
  // The direct kernel takes one batch: more go to the staged one.
  EXPECT_TRUE(starts_with(plan(product(kQ4_0, 4096, 64, 0, 0, 1, 2), true).shader,
                          "mul_mat_vec_staged_dotq"));
  const OpPlan two = plan(product(kQ4_0, 4096, 64, 0, 0, 2), true);
  EXPECT_STREQ(two.shader, "mul_mat_vec_direct_subgroup");
  EXPECT_EQ(two.spec[1], 2u);
}

TEST(VkMatvecPlan, F16RowsSixteenByteAlignedGoStraightToRegisters) {
  struct Want {
    int64_t n, cols;
    uint32_t rows;
  };
  // 4 rows per workgroup for wide matrices of 1-2 columns, 2 otherwise, 1 past 4 columns.
  for (const Want w : {Want{14336, 1, 4}, Want{4096, 1, 2}, Want{128256, 2, 4}, Want{4096, 3, 2},
                       Want{4096, 8, 1}}) {
    SCOPED_TRACE(w.n * 10 + w.cols);
    const OpPlan p = plan(product(kF16, 4096, w.n, 0, 0, w.cols), false);
    EXPECT_STREQ(p.shader, "mul_mat_vec_f16_subgroup");
    EXPECT_EQ(p.spec[1], static_cast<uint32_t>(w.cols));
    EXPECT_EQ(p.spec[3], 128u);  // 512 pieces a row, two per invocation and pass
    EXPECT_EQ(p.spec[4], w.rows);
    EXPECT_EQ(p.spec[5], 2u);
    EXPECT_EQ(p.groups, static_cast<uint64_t>((w.n + w.rows - 1) / w.rows));
  }
  // Short rows take a smaller workgroup, never below a subgroup.
  EXPECT_EQ(plan(product(kF16, 512, 64, 0), false).spec[3], 32u);
  EXPECT_EQ(plan(product(kF16, 1024, 64, 0), false).spec[3], 64u);
  // Rows off 16-byte boundaries, of other lengths or in batches stay staged.
  EXPECT_TRUE(starts_with(plan(product(kF16, 4096, 64, 8), false).shader, "mul_mat_vec_staged"));
  EXPECT_TRUE(starts_with(plan(product(kF16, 4096, 64, 0, 8), false).shader, "mul_mat_vec_staged"));
  EXPECT_TRUE(
      starts_with(plan(product(kF16, 4096, 64, 0, 0, 1, 2), false).shader, "mul_mat_vec_staged"));
  EXPECT_STREQ(plan(product(kF16, 4100, 64, 0), false).shader, "mul_mat_vec_subgroup");
}

TEST(VkMatvecPlan, NoSubgroupsTheSharedMemoryReduction) {
  Features f = nvidia_like();
  f.subgroup_arith = false;
  EXPECT_STREQ(plan(product(kQ4_K, 4096, 64, 0), true, f).shader, "mul_mat_vec_direct");
}

}  // namespace
}  // namespace polyinfer::vk
