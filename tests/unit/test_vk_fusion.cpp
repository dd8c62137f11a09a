// The Vulkan backend's fusion planner (src/backends/vulkan/vk_fusion.cpp),
// which is host code: which consecutive nodes become one dispatch, which stay
// apart because one would read or overwrite another's bytes, and which
// matrix-vector products share one quantization of their activations.
// Buffers are stand-in handles (the planner compares them, never
// dereferences them).
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "backends/vulkan/vk_fusion.hpp"
#include "graph/memory_plan.hpp"
#include "llama_layer_nodes.hpp"
#include "pi_node_builder.hpp"

namespace polyinfer::vk {
namespace {

// The arena planner keeps a unit's inputs from being reused by its outputs
// only for units of at most kFuseWindow nodes (graph/memory_plan.hpp).
static_assert(kMaxUnitNodes <= kFuseWindow);

using namespace test_graph;  // stand-in tensors, type codes, the layer's shapes

pi_node rope(const pi_tensor& x, const pi_tensor& dst) {
  return test_graph::stand_in_rope(x, dst, kD);
}

pi_node mul_mat(uint32_t wtype, uint64_t w_offset, int64_t rows, const pi_tensor& x, int out) {
  return node(PI_OP_MUL_MAT, {tensor(wtype, kWeights, w_offset, {x.ne[0], rows}), x},
              slot(out, {rows, x.ne[1]}));
}

// A llama decode layer's attention nodes: ADD, RMS_NORM, MUL, the Q, K, V
// products, ROPE Q, ROPE K (over Q, which dies at ROPE Q), the cache writes.
std::vector<pi_node> attention_nodes(int64_t cols = 1, uint32_t wtype = kQ4_0) {
  const int64_t e = kEmbd;
  const pi_tensor xn = slot(2, {e, cols});
  std::vector<pi_node> g = test_graph::add_norm_mul_nodes(cols);
  g.push_back(mul_mat(wtype, 4096, e, xn, 3));
  g.push_back(mul_mat(wtype, 65536, 128, xn, 4));
  g.push_back(mul_mat(wtype, 131072, 128, xn, 5));
  g.push_back(rope(slot(3, {kD, kHeads, cols}), slot(6, {kD, kHeads, cols})));
  g.push_back(rope(slot(4, {kD, kKvHeads, cols}), slot(3, {kD, kKvHeads, cols})));
  g.push_back(node(PI_OP_CPY, {slot(3, {kD, kKvHeads, cols})},
                   tensor(kF16, kCache, 0, {kD, kKvHeads, cols})));
  g.push_back(node(PI_OP_CPY, {slot(5, {kD, kKvHeads, cols})},
                   tensor(kF16, kCache, 1 << 20, {kD, kKvHeads, cols})));
  return g;
}

Features features(bool fusion = true, bool prequant = true) {
  Features f;
  f.int_dot = true;
  f.fusion = fusion;
  f.prequant = prequant;
  f.prequant_min_k = 0;  // the nodes here have short rows
  return f;
}

std::vector<Unit> plan(const std::vector<pi_node>& g, const Features& f = features()) {
  return plan_units(pi_graph{g.data(), static_cast<uint32_t>(g.size())}, f);
}

std::vector<UnitKind> kinds(const std::vector<Unit>& units) {
  std::vector<UnitKind> k;
  for (const Unit& u : units) k.push_back(u.kind);
  return k;
}

// The first nodes of the units for which `flag` holds.
std::vector<uint32_t> firsts(const std::vector<Unit>& units, bool Unit::*flag) {
  std::vector<uint32_t> q;
  for (const Unit& u : units)
    if (u.*flag) q.push_back(u.first);
  return q;
}
// Products that start a quantization or read codes; norm units that write them.
std::vector<uint32_t> quantized(const std::vector<Unit>& units) {
  return firsts(units, &Unit::quantize);
}
std::vector<uint32_t> reading(const std::vector<Unit>& units) {
  return firsts(units, &Unit::reads_codes);
}
std::vector<uint32_t> writing(const std::vector<Unit>& units) {
  return firsts(units, &Unit::writes_codes);
}

constexpr UnitKind kS = UnitKind::kSingle;

constexpr UnitKind kF = UnitKind::kFolded;

// The (rope, cache) epilogue nodes of each product that reads codes, in order.
std::vector<std::pair<uint32_t, uint32_t>> epilogues(const std::vector<Unit>& units) {
  std::vector<std::pair<uint32_t, uint32_t>> e;
  for (const Unit& u : units)
    if (u.reads_codes) e.emplace_back(u.rope, u.cache);
  return e;
}
using Epilogues = std::vector<std::pair<uint32_t, uint32_t>>;

// The units of the first `n` nodes.
std::vector<UnitKind> kinds_before(const std::vector<Unit>& units, uint32_t n) {
  std::vector<UnitKind> k;
  for (const Unit& u : units)
    if (u.first < n) k.push_back(u.kind);
  return k;
}

TEST(VkFusion, DecodeAttention) {
  const std::vector<Unit> u = plan(attention_nodes());
  ASSERT_EQ(kinds(u),
            (std::vector<UnitKind>{UnitKind::kAddNormMul, kS, kS, kS, kF, UnitKind::kRopeCpy, kF}));
  EXPECT_EQ(u[0].count, 3u);
  EXPECT_EQ(u[1].first, 3u);
  // The Q product computes ROPE Q, the V product V's cache write. ROPE K
  // writes over Q, which ROPE Q reads after the K product: it stays in its
  // place, fused with the cache write of its output.
  EXPECT_EQ(epilogues(u), (Epilogues{{6, 0}, {0, 0}, {0, 9}}));
  EXPECT_EQ(u[5].first, 7u);
  EXPECT_EQ(u[5].count, 2u);
  // Q, K and V read the codes that the norm dispatch wrote: no quantize
  // dispatch.
  EXPECT_EQ(writing(u), (std::vector<uint32_t>{0}));
  EXPECT_EQ(reading(u), (std::vector<uint32_t>{3, 4, 5}));
  EXPECT_TRUE(quantized(u).empty());
}

// ROPE K's output in a slot of its own, as a model's memory plan lays it out.
std::vector<pi_node> attention_nodes_apart(int64_t cols = 1, uint32_t wtype = kQ4_0) {
  std::vector<pi_node> g = attention_nodes(cols, wtype);
  g[7].dst = slot(7, {kD, kKvHeads, cols});
  g[8].src[0] = g[7].dst;
  return g;
}

// Each product then does the ROPE and/or cache write of its output: nothing
// is left between the products and the attention. Only products in the
// direct kernel (8-bit activations read as codes, Q4_0/Q4_K/Q6_K, 1-8
// columns) have the epilogue; K-quant rows go one per workgroup, a ROPE
// pair's two workgroups meeting through a word of scratch.
TEST(VkFusion, ProductsFoldTheirRopeAndCacheWrites) {
  for (uint32_t wtype : {kQ4_0, kQ4_K, kQ6_K}) {
    for (int64_t cols : {1, 8}) {
      const std::vector<Unit> u = plan(attention_nodes_apart(cols, wtype));
      EXPECT_EQ(kinds(u),
                (std::vector<UnitKind>{UnitKind::kAddNormMul, kS, kS, kS, kF, kF, kF, kF}))
          << wtype << " " << cols;
      EXPECT_EQ(epilogues(u), (Epilogues{{6, 0}, {7, 8}, {0, 9}})) << wtype << " " << cols;
    }
  }
  // Otherwise ROPE K and its cache write run as one dispatch of rope.comp.
  const std::vector<UnitKind> unfolded{UnitKind::kAddNormMul, kS, kS, kS, kS,
                                       UnitKind::kRopeCpy,    kS};
  EXPECT_EQ(kinds(plan(attention_nodes_apart(9))), unfolded);
  EXPECT_EQ(kinds(plan(attention_nodes_apart(1, kQ8_0))), unfolded);
  EXPECT_EQ(kinds(plan(attention_nodes_apart(1, kF32))), unfolded);
  EXPECT_EQ(kinds(plan(attention_nodes_apart(), features(true, false))), unfolded);
  EXPECT_EQ(kinds(plan(attention_nodes_apart(), features(false, true))),
            std::vector<UnitKind>(10, kS));
}

// A NeoX ROPE (pairs half a head apart), one over a part of the output or
// over its own input, or one that a node between would overwrite stays a
// node of its own; a quantized cache is written by its CPY.
TEST(VkFusion, EpilogueNeedsANormalRopeOverTheOutputAndApartBytes) {
  std::vector<pi_node> g = attention_nodes_apart();
  g[6].i[0] = 2;
  EXPECT_EQ(epilogues(plan(g)), (Epilogues{{0, 0}, {7, 8}, {0, 9}}));
  g = attention_nodes_apart();
  g[6].src[0] = slot(3, {kD, 1});  // one head
  EXPECT_EQ(epilogues(plan(g)), (Epilogues{{0, 0}, {7, 8}, {0, 9}}));
  g = attention_nodes_apart();
  g[6].dst = g[6].src[0];  // in place
  EXPECT_EQ(epilogues(plan(g)), (Epilogues{{0, 0}, {7, 8}, {0, 9}}));
  g = attention_nodes_apart();
  g[6].dst = slot(4, {kD, kHeads});  // over K's output, which the K product writes later
  EXPECT_EQ(epilogues(plan(g))[0], (std::pair<uint32_t, uint32_t>{0, 0}));
  g = attention_nodes_apart();
  g[8].dst.type = kQ8_0;
  g[9].dst.type = kQ8_0;
  const std::vector<Unit> u = plan(g);
  EXPECT_EQ(epilogues(u), (Epilogues{{6, 0}, {7, 0}, {0, 0}}));
  EXPECT_EQ(kinds(u), (std::vector<UnitKind>{UnitKind::kAddNormMul, kS, kS, kS, kF, kF, kS, kS}));
}

// Rows shorter than prequant_min_k still read a fused norm's codes (they
// cost no dispatch), but get no quantize dispatch of their own: after another
// node, the product's workgroups quantize.
TEST(VkFusion, ShortRowsReadTheNormsCodesOnly) {
  Features f = features();
  f.prequant_min_k = 4096;
  const std::vector<Unit> u = plan(attention_nodes(), f);
  EXPECT_EQ(reading(u), (std::vector<uint32_t>{3, 4, 5}));
  std::vector<pi_node> g = attention_nodes();
  g.insert(g.begin() + 4, rope(slot(3, {kD, kHeads}), slot(7, {kD, kHeads})));
  const std::vector<Unit> v = plan(g, f);
  EXPECT_EQ(reading(v), (std::vector<uint32_t>{3}));
  EXPECT_TRUE(quantized(v).empty());
}

// The norm's codes take the row (and a pad per 32 values) in shared memory:
// a device without it quantizes by a dispatch.
TEST(VkFusion, NormCodesNeedTheSharedMemory) {
  Features f = features();
  f.max_shared = 1024;
  const std::vector<Unit> u = plan(attention_nodes(), f);
  EXPECT_EQ(u[0].kind, UnitKind::kAddNormMul);
  EXPECT_TRUE(writing(u).empty());
  EXPECT_EQ(quantized(u), (std::vector<uint32_t>{3}));
  EXPECT_EQ(reading(u), (std::vector<uint32_t>{3, 4, 5}));
}

// Rows of 4,096 values and more take workgroups of 1,024 where the device
// has them (4 values each), shorter rows 256; R is the power of two that
// holds the row, at most kMaxFusedNormRow in all.
TEST(VkFusion, FusedNormWorkgroupAndValues) {
  Features f = features();
  f.max_workgroup = 1024;
  EXPECT_EQ(fused_norm_workgroup(4096, f), 1024u);
  EXPECT_EQ(fused_norm_workgroup(8192, f), 1024u);
  EXPECT_EQ(fused_norm_workgroup(2048, f), 256u);
  f.max_workgroup = 512;
  EXPECT_EQ(fused_norm_workgroup(4096, f), 256u);
  EXPECT_EQ(fused_norm_values(4096, 1024), 4u);
  EXPECT_EQ(fused_norm_values(4000, 1024), 4u);
  EXPECT_EQ(fused_norm_values(8192, 1024), 8u);
  EXPECT_EQ(fused_norm_values(2048, 256), 8u);
  EXPECT_EQ(fused_norm_values(2080, 256), 16u);
  EXPECT_EQ(fused_norm_values(8192, 256), 32u);
}

TEST(VkFusion, FusionOffIsOneUnitPerNode) {
  const std::vector<Unit> u = plan(attention_nodes(), features(false, false));
  ASSERT_EQ(u.size(), 10u);
  for (const Unit& x : u) {
    EXPECT_EQ(x.kind, kS);
    EXPECT_FALSE(x.quantize);
    EXPECT_FALSE(x.reads_codes);
    EXPECT_FALSE(x.writes_codes);
  }
}

TEST(VkFusion, PrequantOffKeepsNormFusion) {
  const std::vector<Unit> u = plan(attention_nodes(), features(true, false));
  EXPECT_EQ(u[0].kind, UnitKind::kAddNormMul);
  EXPECT_TRUE(quantized(u).empty());
  EXPECT_TRUE(writing(u).empty());
  EXPECT_TRUE(reading(u).empty());
}

TEST(VkFusion, NormMulWithoutAdd) {
  std::vector<pi_node> g = attention_nodes();
  g.erase(g.begin());
  const std::vector<Unit> u = plan(g);
  EXPECT_EQ(u[0].kind, UnitKind::kNormMul);
  EXPECT_EQ(u[0].count, 2u);
  EXPECT_EQ(writing(u), (std::vector<uint32_t>{0}));
  EXPECT_EQ(reading(u), (std::vector<uint32_t>{2, 3, 4}));
}

// Up to 8 columns (tokens: kMatvecCols) the products are matrix-vector ones
// with 8-bit activations, which the norm writes for every column; past 8 they
// are GEMMs with float activations.
TEST(VkFusion, ColumnsAndProducts) {
  for (int64_t cols : {2, 3, 8}) {
    EXPECT_EQ(writing(plan(attention_nodes(cols))), (std::vector<uint32_t>{0})) << cols;
    EXPECT_EQ(reading(plan(attention_nodes(cols))), (std::vector<uint32_t>{3, 4, 5})) << cols;
  }
  const std::vector<Unit> u = plan(attention_nodes(9));
  EXPECT_EQ(u[0].kind, UnitKind::kAddNormMul);
  EXPECT_TRUE(quantized(u).empty());
  EXPECT_TRUE(writing(u).empty());
  EXPECT_TRUE(reading(u).empty());
}

// Weights without integer dot products (Q8_0, F32) read float activations.
TEST(VkFusion, OnlyIntDotProductsQuantize) {
  for (uint32_t type : {kQ8_0, kF32}) {
    const std::vector<Unit> u = plan(attention_nodes(1, type));
    EXPECT_TRUE(quantized(u).empty());
    EXPECT_TRUE(writing(u).empty());
    EXPECT_TRUE(reading(u).empty());
  }
  Features no_dot = features();
  no_dot.int_dot = false;
  EXPECT_TRUE(quantized(plan(attention_nodes(), no_dot)).empty());
  EXPECT_TRUE(writing(plan(attention_nodes(), no_dot)).empty());
}

// The sum written over an ADD input: the norm and product still fuse, the ADD
// stays apart.
TEST(VkFusion, AddOutputOverItsInputStaysApart) {
  std::vector<pi_node> g = attention_nodes();
  g[0].dst = g[0].src[1];
  g[1].src[0] = g[0].dst;
  const std::vector<Unit> u = plan(g);
  EXPECT_EQ(u[0].kind, kS);
  EXPECT_EQ(u[1].kind, UnitKind::kNormMul);
}

// The norm written over the weight row that the product still reads.
TEST(VkFusion, NormOverWeightStaysApart) {
  std::vector<pi_node> g = attention_nodes();
  g[2].src[1] = slot(1, {kEmbd});
  for (UnitKind k : kinds_before(plan(g), 6)) EXPECT_EQ(k, kS);
}

// Two outputs sharing bytes: their order would matter.
TEST(VkFusion, OutputsMustBeDisjoint) {
  std::vector<pi_node> g = attention_nodes();
  g[2].dst = g[0].dst;
  for (UnitKind k : kinds_before(plan(g), 6)) EXPECT_EQ(k, kS);
}

TEST(VkFusion, MulMustReadTheNormAndARowVector) {
  std::vector<pi_node> g = attention_nodes();
  g[2].src[0] = slot(7, {kEmbd});
  EXPECT_EQ(plan(g)[0].kind, kS);
  g = attention_nodes();
  g[2].src[1] = tensor(kF32, kWeights, 0, {kEmbd, 2});
  EXPECT_EQ(plan(g)[0].kind, kS);
}

TEST(VkFusion, RowsLongerThanTheRegistersStayApart) {
  const int64_t k = kMaxFusedNormRow + 32;
  std::vector<pi_node> g;
  g.push_back(node(PI_OP_RMS_NORM, {tensor(kF32, kInputs, 0, {k})}, tensor(kF32, kArena, 0, {k})));
  g.push_back(node(PI_OP_MUL, {tensor(kF32, kArena, 0, {k}), tensor(kF32, kWeights, 0, {k})},
                   tensor(kF32, kArena, 65536, {k})));
  EXPECT_EQ(kinds(plan(g)), (std::vector<UnitKind>{kS, kS}));
}

// The cache write must copy exactly ROPE's output, into a float cache, and
// neither output may lie over ROPE's input.
TEST(VkFusion, RopeCpyNeedsItsOutputAFloatCacheAndApartBytes) {
  std::vector<pi_node> g = attention_nodes();
  g[8].src[0] = slot(4, {kD, kKvHeads});  // V's product, not the roped K
  EXPECT_EQ(kinds(plan(g))[5], kS);
  g = attention_nodes();
  g[8].dst.type = kQ8_0;
  EXPECT_EQ(kinds(plan(g))[5], kS);
  g = attention_nodes();
  g[7].dst = g[7].src[0];  // ROPE K in place
  g[8].src[0] = g[7].dst;
  EXPECT_EQ(kinds(plan(g))[5], kS);
  g = attention_nodes();
  g[8].dst = tensor(kF16, kCache, 1, {kD, kKvHeads, 1});  // halfwords astride words
  EXPECT_EQ(kinds(plan(g))[5], kS);
}

// The feed-forward: gate and up over the normed activations, SWIGLU, down.
std::vector<pi_node> ffn_nodes(uint32_t down_type = kQ4_0) {
  const pi_tensor x = slot(2, {kEmbd});
  std::vector<pi_node> g;
  g.push_back(mul_mat(kQ4_0, 4096, 512, x, 3));
  g.push_back(mul_mat(kQ4_0, 131072, 512, x, 4));
  g.push_back(node(PI_OP_SWIGLU, {slot(3, {512}), slot(4, {512})}, slot(5, {512})));
  g.push_back(mul_mat(down_type, 262144, kEmbd, slot(5, {512}), 6));
  return g;
}

// The down projection's codes come from the SWIGLU dispatch, which also
// writes SWIGLU's output; gate and up share one quantization.
TEST(VkFusion, SwigluQuantizesForTheNextProduct) {
  const std::vector<Unit> u = plan(ffn_nodes());
  ASSERT_EQ(kinds(u), (std::vector<UnitKind>{kS, kS, UnitKind::kSwigluQuant, kS}));
  EXPECT_EQ(quantized(u), (std::vector<uint32_t>{0}));
  const std::vector<Unit> off = plan(ffn_nodes(), features(false, true));
  EXPECT_EQ(kinds(off), (std::vector<UnitKind>{kS, kS, kS, kS}));
  EXPECT_EQ(quantized(off), (std::vector<uint32_t>{0, 3}));
}

// A product with float activations (Q8_0 weights), SWIGLU in place, or an
// output the product does not read exactly: SWIGLU on its own.
TEST(VkFusion, SwigluQuantNeedsA8BitProductOfItsOutput) {
  EXPECT_EQ(kinds(plan(ffn_nodes(kQ8_0)))[2], kS);
  std::vector<pi_node> g = ffn_nodes();
  g[2].dst = g[2].src[1];
  g[3].src[1] = g[2].dst;
  EXPECT_EQ(kinds(plan(g))[2], kS);
  g = ffn_nodes();
  g[3].src[1] = slot(3, {512});
  EXPECT_EQ(kinds(plan(g))[2], kS);
}

// FLASH_ATTN over the cache (Q roped into slot 6), then the O product over
// its output seen as one row of its heads.
std::vector<pi_node> attn_o_nodes(uint32_t o_type = kQ4_0) {
  const pi_tensor cache_k = tensor(kF16, kCache, 0, {kD, 8, kKvHeads});
  const pi_tensor cache_v = tensor(kF16, kCache, kVCacheOffset, {kD, 8, kKvHeads});
  const pi_tensor mask = tensor(kF32, kInputs, 4096, {8, 1});
  std::vector<pi_node> g;
  g.push_back(node(PI_OP_FLASH_ATTN, {slot(6, {kD, 1, kHeads}), cache_k, cache_v, mask},
                   slot(7, {kD, kHeads, 1})));
  g.push_back(mul_mat(o_type, 4096, kEmbd, slot(7, {kEmbd}), 8));
  return g;
}

// The attention writes the O product's codes; a product that reads its
// output otherwise (a head of it) or with float activations does not get them.
TEST(VkFusion, AttentionWritesTheOProductsCodes) {
  const std::vector<Unit> u = plan(attn_o_nodes());
  EXPECT_EQ(writing(u), (std::vector<uint32_t>{0}));
  EXPECT_EQ(reading(u), (std::vector<uint32_t>{1}));
  EXPECT_TRUE(quantized(u).empty());
  std::vector<pi_node> g = attn_o_nodes();
  g[1] = mul_mat(kQ4_0, 4096, kEmbd, slot(7, {kD}), 8);
  EXPECT_TRUE(writing(plan(g)).empty());
  EXPECT_EQ(quantized(plan(g)), (std::vector<uint32_t>{1}));
  EXPECT_TRUE(writing(plan(attn_o_nodes(kQ8_0))).empty());
  EXPECT_TRUE(writing(plan(attn_o_nodes(), features(true, false))).empty());
}

// The O product (rows of `rows` values over the attention's output), the
// residual ADD over its output, the next norm and its weight, then the gate
// (`gate_type`) and up (Q4_K) products over the MUL's output: llama's O
// projection and the feed-forward's norm.
std::vector<pi_node> o_norm_nodes(int64_t rows = kEmbd, uint32_t gate_type = kQ4_0,
                                  int64_t cols = 1) {
  std::vector<pi_node> g;
  g.push_back(mul_mat(kQ4_0, 4096, rows, slot(7, {kEmbd, cols}), 8));
  g.push_back(node(PI_OP_ADD, {slot(8, {rows, cols}), tensor(kF32, kInputs, 64, {rows, cols})},
                   slot(0, {rows, cols})));
  g.push_back(node(PI_OP_RMS_NORM, {slot(0, {rows, cols})}, slot(1, {rows, cols})));
  g.push_back(node(PI_OP_MUL, {slot(1, {rows, cols}), tensor(kF32, kWeights, 0, {rows})},
                   slot(2, {rows, cols})));
  g.push_back(mul_mat(gate_type, 262144, 512, slot(2, {rows, cols}), 3));
  g.push_back(mul_mat(kQ4_K, 524288, 512, slot(2, {rows, cols}), 4));
  return g;
}

// A device with eight-lane shuffles and the Vulkan memory model (lavapipe, NVIDIA).
Features block_features() {
  Features f = features();
  f.subgroup_arith = f.subgroup_lanes8 = f.memory_model = true;
  f.subgroup_size = 32;
  return f;
}

std::vector<uint32_t> norm_adds(const std::vector<Unit>& units) {
  std::vector<uint32_t> a;
  for (const Unit& u : units)
    if (u.norm != 0) a.push_back(u.norm);
  return a;
}
// Each product's Unit::scale_norm, in order.
std::vector<uint32_t> scales(const std::vector<Unit>& units) {
  std::vector<uint32_t> r;
  for (const Unit& u : units)
    if (u.reads_codes) r.push_back(u.scale_norm);
  return r;
}

// The O product's workgroups do the ADD and make the norm's codes: the ADD is
// folded, the norm a unit that writes no codes, and gate and up read the
// product's codes (no quantization) scaled by that norm.
TEST(VkFusion, ProductMakesTheNormsCodesByBlocks) {
  const std::vector<Unit> u = plan(o_norm_nodes(), block_features());
  EXPECT_EQ(kinds(u), (std::vector<UnitKind>{kS, kF, UnitKind::kNormMul, kS, kS}));
  EXPECT_EQ(norm_adds(u), (std::vector<uint32_t>{1}));
  EXPECT_TRUE(writing(u).empty());
  EXPECT_EQ(quantized(u), (std::vector<uint32_t>{0}));
  EXPECT_EQ(reading(u), (std::vector<uint32_t>{0, 4, 5}));
  EXPECT_EQ(scales(u), (std::vector<uint32_t>{0, 2, 2}));
  // Without the memory model (or the lanes) the norm is a dispatch that writes the codes.
  Features f = block_features();
  f.memory_model = false;
  const std::vector<Unit> apart = plan(o_norm_nodes(), f);
  EXPECT_EQ(kinds(apart), (std::vector<UnitKind>{kS, UnitKind::kAddNormMul, kS, kS}));
  EXPECT_TRUE(norm_adds(apart).empty());
  EXPECT_EQ(writing(apart), (std::vector<uint32_t>{1}));
  EXPECT_EQ(scales(apart), (std::vector<uint32_t>{0, 0, 0}));
  f = block_features();
  f.subgroup_lanes8 = false;
  EXPECT_TRUE(norm_adds(plan(o_norm_nodes(), f)).empty());
}

// K-quant products make the blocks as Q4_0 ones do. No blocks where the
// product is not the direct kernel's (Q8_0), the next product has float
// activations (Q8_0), the rows are not whole blocks of 32, the product has
// two columns, the ADD does not read its output, or the norm's output lies
// over the product's activations. A float product in the run stops the
// scaled codes: the next one quantizes the MUL's output anew.
TEST(VkFusion, NormBlocksNeedACodesReaderWholeBlocksAndApartBytes) {
  const Features f = block_features();
  std::vector<pi_node> g = o_norm_nodes();
  for (uint32_t t : {kQ4_K, kQ6_K}) {
    g[0] = mul_mat(t, 4096, kEmbd, slot(7, {kEmbd}), 8);
    EXPECT_EQ(norm_adds(plan(g, f)), (std::vector<uint32_t>{1})) << t;
  }
  g[0] = mul_mat(kQ8_0, 4096, kEmbd, slot(7, {kEmbd}), 8);
  EXPECT_TRUE(norm_adds(plan(g, f)).empty());
  EXPECT_TRUE(norm_adds(plan(o_norm_nodes(kEmbd, kQ8_0), f)).empty());
  EXPECT_TRUE(norm_adds(plan(o_norm_nodes(kEmbd + 16), f)).empty());
  EXPECT_TRUE(norm_adds(plan(o_norm_nodes(kEmbd, kQ4_0, 2), f)).empty());
  g = o_norm_nodes();
  g[1].src[0] = slot(9, {kEmbd});
  EXPECT_TRUE(norm_adds(plan(g, f)).empty());
  g = o_norm_nodes();
  g[2].dst = slot(7, {kEmbd});
  g[3].src[0] = g[2].dst;
  EXPECT_TRUE(norm_adds(plan(g, f)).empty());
  g = o_norm_nodes();
  g.insert(g.begin() + 5, mul_mat(kQ8_0, 786432, 512, slot(2, {kEmbd}), 5));
  const std::vector<Unit> u = plan(g, f);
  EXPECT_EQ(norm_adds(u), (std::vector<uint32_t>{1}));
  EXPECT_EQ(quantized(u), (std::vector<uint32_t>{0, 6}));
  EXPECT_EQ(scales(u), (std::vector<uint32_t>{0, 2, 0}));
}

// o_norm_nodes with the RMS_NORM's and MUL's outputs scratch (PI_NODE_SCRATCH).
std::vector<pi_node> scratch_norm_nodes() {
  std::vector<pi_node> g = o_norm_nodes();
  g[2].flags = g[3].flags = PI_NODE_SCRATCH;
  return g;
}

// The norm beside gate and up has no dispatch where its outputs are scratch
// and only products reading the blocks' codes read them (also an up product
// folded with its gate); it stays where either output is kept, or another
// node reads one: the norm's output as floats, or a float product the MUL's
// output. A node writing over all the bytes ends the search for readers; one
// writing over part of them does not.
TEST(VkFusion, UnreadNormBesideTheBlocksHasNoDispatch) {
  const Features f = block_features();
  const UnitKind kN = UnitKind::kNormMul;
  EXPECT_EQ(kinds(plan(scratch_norm_nodes(), f)), (std::vector<UnitKind>{kS, kF, kF, kS, kS}));
  std::vector<pi_node> g = scratch_norm_nodes();
  g[3].flags = 0;
  EXPECT_EQ(kinds(plan(g, f)), (std::vector<UnitKind>{kS, kF, kN, kS, kS}));
  g = scratch_norm_nodes();
  g[2].flags = 0;
  EXPECT_EQ(kinds(plan(g, f)), (std::vector<UnitKind>{kS, kF, kN, kS, kS}));
  g = scratch_norm_nodes();
  g.push_back(node(PI_OP_ADD, {slot(1, {kEmbd}), slot(0, {kEmbd})}, slot(5, {kEmbd})));
  EXPECT_EQ(kinds(plan(g, f))[2], kN);  // the norm's output read as floats
  g = scratch_norm_nodes();
  g.insert(g.begin() + 5, mul_mat(kQ8_0, 786432, 512, slot(2, {kEmbd}), 5));
  EXPECT_EQ(kinds(plan(g, f))[2], kN);  // a float product of the MUL's output
  g = scratch_norm_nodes();
  g.push_back(node(PI_OP_ADD, {slot(5, {kEmbd}), slot(5, {kEmbd})}, slot(2, {kEmbd})));
  g.push_back(node(PI_OP_ADD, {slot(2, {kEmbd}), slot(5, {kEmbd})}, slot(6, {kEmbd})));
  EXPECT_EQ(kinds(plan(g, f))[2], kF);  // slot 2 read again only after it was written over
  g = scratch_norm_nodes();             // half of it written over, then all of it read
  g.push_back(node(PI_OP_ADD, {slot(5, {kEmbd / 2}), slot(5, {kEmbd / 2})}, slot(2, {kEmbd / 2})));
  g.push_back(node(PI_OP_ADD, {slot(2, {kEmbd}), slot(5, {kEmbd})}, slot(6, {kEmbd})));
  EXPECT_EQ(kinds(plan(g, f))[2], kN);
  // Gate and up folded with SWIGLU (Unit::swiglu): the up product reads the
  // codes in the gate's dispatch.
  g = scratch_norm_nodes();
  g.resize(4);
  for (const pi_node& n : ffn_nodes()) g.push_back(n);
  const std::vector<Unit> u = plan(g, f);
  EXPECT_EQ(u[3].swiglu, 6u);
  EXPECT_EQ(kinds(u), (std::vector<UnitKind>{kS, kF, kF, kS, kF, kF, kS}));
}

// Gate and up alike over the same codes, SWIGLU over them and a product of
// its output as codes: one dispatch (the gate's unit) runs both products and
// SWIGLU, whose codes the down product reads; up and SWIGLU are folded.
TEST(VkFusion, GateAndUpMakeSwiglusCodesByBlocks) {
  const std::vector<Unit> u = plan(ffn_nodes(), block_features());
  EXPECT_EQ(kinds(u), (std::vector<UnitKind>{kS, kF, kF, kS}));
  EXPECT_EQ(u[0].swiglu, 2u);
  EXPECT_EQ(reading(u), (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(quantized(u), (std::vector<uint32_t>{0}));
  std::vector<pi_node> g = ffn_nodes();  // K-quant rows (Q4_K_M's gate and up)
  g[0] = mul_mat(kQ4_K, 4096, 512, slot(2, {kEmbd}), 3);
  g[1] = mul_mat(kQ4_K, 131072, 512, slot(2, {kEmbd}), 4);
  EXPECT_EQ(plan(g, block_features())[0].swiglu, 2u);
}

// The feed-forward with `rows` rows in gate and up (outputs 1 MiB apart) of
// `type`.
std::vector<pi_node> wide_ffn_nodes(int64_t rows, uint32_t type = kQ4_0) {
  const pi_tensor x = slot(2, {kEmbd});
  const pi_tensor gate = tensor(kF32, test_graph::kArena, 1 << 20, {rows}),
                  up = tensor(kF32, test_graph::kArena, 2 << 20, {rows}),
                  act = tensor(kF32, test_graph::kArena, 3 << 20, {rows});
  std::vector<pi_node> g = ffn_nodes();
  g[0] = node(PI_OP_MUL_MAT, {tensor(type, kWeights, 4096, {kEmbd, rows}), x}, gate);
  g[1] = node(PI_OP_MUL_MAT, {tensor(type, kWeights, 1 << 24, {kEmbd, rows}), x}, up);
  g[2] = node(PI_OP_SWIGLU, {gate, up}, act);
  g[3] =
      node(PI_OP_MUL_MAT, {tensor(kQ4_0, kWeights, 1 << 25, {rows, kEmbd}), act}, slot(6, {kEmbd}));
  return g;
}

// No fold without the memory model, past 8,192 Q4_0 rows (K-quant rows fold
// at any count), with an up product of another type or over other
// activations, SWIGLU's inputs swapped, or a down product with float
// activations (Q8_0): SWIGLU's own dispatch quantizes.
TEST(VkFusion, SwigluBlocksNeedAlikeProductsAndACodesReader) {
  const Features f = block_features();
  const auto folds = [&](const std::vector<pi_node>& g) { return plan(g, f)[0].swiglu != 0; };
  ASSERT_TRUE(folds(ffn_nodes()));
  Features no_model = f;
  no_model.memory_model = false;
  EXPECT_EQ(plan(ffn_nodes(), no_model)[0].swiglu, 0u);
  EXPECT_TRUE(folds(wide_ffn_nodes(8192)));
  EXPECT_FALSE(folds(wide_ffn_nodes(8224)));
  EXPECT_TRUE(folds(wide_ffn_nodes(14336, kQ4_K)));
  std::vector<pi_node> g = ffn_nodes();
  g[1] = mul_mat(kQ4_K, 131072, 512, slot(2, {kEmbd}), 4);
  EXPECT_FALSE(folds(g));
  g = ffn_nodes();
  g[1] = mul_mat(kQ4_0, 131072, 512, slot(7, {kEmbd}), 4);
  EXPECT_FALSE(folds(g));
  g = ffn_nodes();
  std::swap(g[2].src[0], g[2].src[1]);
  EXPECT_FALSE(folds(g));
  EXPECT_FALSE(folds(ffn_nodes(kQ8_0)));
}

// A product that overwrites the activations ends the run: the next product
// over "the same" tensor must quantize what is there now.
TEST(VkFusion, ProductOverActivationsRequantizes) {
  std::vector<pi_node> g = attention_nodes();
  g[3].dst = slot(2, {kEmbd});
  EXPECT_EQ(quantized(plan(g)), (std::vector<uint32_t>{4}));
  EXPECT_EQ(reading(plan(g)), (std::vector<uint32_t>{3, 4, 5}));
}

// A node between two products over the same tensor ends the run.
TEST(VkFusion, OtherNodeEndsTheRun) {
  std::vector<pi_node> g = attention_nodes();
  g.insert(g.begin() + 4, rope(slot(3, {kD, kHeads}), slot(7, {kD, kHeads})));
  EXPECT_EQ(quantized(plan(g)), (std::vector<uint32_t>{5}));
  g = attention_nodes();
  g[4] = mul_mat(kQ4_0, 65536, 128, slot(8, {kEmbd}), 4);
  EXPECT_EQ(quantized(plan(g)), (std::vector<uint32_t>{4, 5}));
}

}  // namespace
}  // namespace polyinfer::vk
