// The CUDA backend's fusion planner (src/backends/cuda/fusion.cpp), which is
// host code: which consecutive nodes of a graph become one launch, and which
// stay apart because one would read or overwrite another's bytes. Buffers are
// stand-in handles (the planner compares them, never dereferences them).
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "backends/cuda/fusion.hpp"
#include "graph/memory_plan.hpp"
#include "llama_layer_nodes.hpp"
#include "pi_node_builder.hpp"

namespace polyinfer::cuda {
namespace {

// The arena planner keeps a unit's inputs from being reused by its outputs
// only for units of at most kFuseWindow nodes (graph/memory_plan.hpp).
static_assert(kMaxUnitNodes <= kFuseWindow);

using namespace test_graph;  // stand-in tensors, type codes, the layer's shapes

// A llama decode layer's attention nodes with ROPE K's output over Q (slot 3),
// which dies at ROPE Q.
std::vector<pi_node> attention_nodes(int64_t tokens = 1) {
  std::vector<pi_node> g = test_graph::add_norm_mul_nodes(tokens);
  const std::vector<pi_node> rest = test_graph::qkv_rope_cache_nodes(tokens, 0);
  g.insert(g.end(), rest.begin(), rest.end());
  return g;
}

// FLASH_ATTN, the O projection over its heads seen as one column, and the
// feed-forward's gate, up, SWIGLU and down.
std::vector<pi_node> tail_nodes(int64_t tokens = 1) {
  const int64_t e = kEmbd, ffn = 512;
  pi_tensor q = slot(6, {kD, tokens, kHeads});  // llama's view of Q: [D, T, H]
  q.nb[1] = 4 * e;
  q.nb[2] = 4 * kD;
  const pi_tensor k = tensor(kF16, kCache, 0, {kD, 40, kKvHeads});
  const pi_tensor v = tensor(kF16, kCache, 1 << 20, {kD, 40, kKvHeads});
  std::vector<pi_node> g;
  g.push_back(node(PI_OP_FLASH_ATTN, {q, k, v, tensor(kF32, kInputs, 128, {40, tokens})},
                   slot(7, {kD, kHeads, tokens})));
  g.push_back(node(PI_OP_MUL_MAT, {tensor(kQ4_0, kWeights, 4096, {e, e}), slot(7, {e, tokens})},
                   slot(8, {e, tokens})));
  g.push_back(node(PI_OP_MUL_MAT, {tensor(kQ4_0, kWeights, 65536, {e, ffn}), slot(8, {e, tokens})},
                   slot(9, {ffn, tokens})));
  g.push_back(node(PI_OP_MUL_MAT, {tensor(kQ4_0, kWeights, 196608, {e, ffn}), slot(8, {e, tokens})},
                   slot(10, {ffn, tokens})));
  g.push_back(node(PI_OP_SWIGLU, {slot(9, {ffn, tokens}), slot(10, {ffn, tokens})},
                   slot(11, {ffn, tokens})));
  g.push_back(node(PI_OP_MUL_MAT,
                   {tensor(kQ4_0, kWeights, 327680, {ffn, e}), slot(11, {ffn, tokens})},
                   slot(12, {e, tokens})));
  return g;
}

// tail_nodes of 16 tokens (the GEMM path), up's output in a slot of its own
// (16 tokens of gate in slot 9 reach into slot 10).
std::vector<pi_node> prompt_tail_nodes() {
  std::vector<pi_node> t = tail_nodes(16);
  t[3].dst = t[4].src[1] = slot(20, {512, 16});
  return t;
}

std::vector<Unit> plan(const std::vector<pi_node>& g, bool fuse = true) {
  return plan_units(pi_graph{g.data(), static_cast<uint32_t>(g.size())}, fuse);
}

std::vector<UnitKind> kinds(const std::vector<Unit>& units) {
  std::vector<UnitKind> k;
  for (const Unit& u : units) k.push_back(u.kind);
  return k;
}

TEST(CudaFusion, DecodeAttentionIsThreeUnits) {
  const std::vector<Unit> u = plan(attention_nodes());
  ASSERT_EQ(kinds(u), (std::vector<UnitKind>{UnitKind::kAddNormMul, UnitKind::kMatvecGroup,
                                             UnitKind::kRopeKv}));
  EXPECT_TRUE(u[0].quantize_next);  // the Q4_0 products read its output
  EXPECT_EQ(u[1].count, 3u);
  EXPECT_EQ(u[2].first, 6u);
  EXPECT_EQ(u[2].count, 4u);
  EXPECT_EQ(unit_leaders(u, 10), (std::vector<uint32_t>{0, 0, 0, 3, 3, 3, 6, 6, 6, 6}));
}

TEST(CudaFusion, FusionOffIsOneUnitPerNode) {
  const std::vector<Unit> u = plan(attention_nodes(), false);
  ASSERT_EQ(u.size(), 10u);
  for (const Unit& x : u) {
    EXPECT_EQ(x.kind, UnitKind::kSingle);
    EXPECT_FALSE(x.quantize_next);
  }
}

// Several tokens: the ROPE+KV unit holds one; the ROPEs still conflict (K's
// output over Q's input) and stay apart, the cache writes pair up.
TEST(CudaFusion, PrefillKeepsRopesApart) {
  const std::vector<Unit> u = plan(attention_nodes(3));
  ASSERT_EQ(kinds(u),
            (std::vector<UnitKind>{UnitKind::kAddNormMul, UnitKind::kMatvecGroup, UnitKind::kSingle,
                                   UnitKind::kSingle, UnitKind::kCpyPair}));
}

// A prompt (16 tokens: the products take the GEMM): the norm unit and SWIGLU
// write the 16-bit activations of the products after them; the attention
// does not (its output is the O product's columns only after a view).
TEST(CudaFusion, PromptProducersWriteTheGemmsHalves) {
  const std::vector<Unit> a = plan(attention_nodes(16));
  ASSERT_EQ(a[0].kind, UnitKind::kAddNormMul);
  EXPECT_TRUE(a[0].half_next);
  EXPECT_FALSE(a[0].half_bf16);
  EXPECT_FALSE(a[0].quantize_next);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_FALSE(a[i].half_next) << "unit " << i;
  const std::vector<Unit> t = plan(prompt_tail_nodes());
  ASSERT_EQ(kinds(t), std::vector<UnitKind>(6, UnitKind::kSingle));
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].half_next, i == 4) << "unit " << i;
}

// BF16 weights take BF16 activations; F32 weights a float32 GEMM (nothing to
// convert); one token the matrix-vector path (8-bit blocks instead); fusion
// off writes nothing extra.
TEST(CudaFusion, PromptHalvesFollowTheProduct) {
  constexpr uint32_t kBF16 = 30;
  std::vector<pi_node> g = attention_nodes(16);
  g[3].src[0] = tensor(kF16, kWeights, 4096, {kEmbd, kEmbd});
  g[3].src[0].type = kBF16;
  std::vector<Unit> u = plan(g);
  EXPECT_TRUE(u[0].half_next);
  EXPECT_TRUE(u[0].half_bf16);
  g[3].src[0] = tensor(kF32, kWeights, 4096, {kEmbd, kEmbd});
  EXPECT_FALSE(plan(g)[0].half_next);
  EXPECT_FALSE(plan(attention_nodes(1))[0].half_next);
  for (const Unit& x : plan(attention_nodes(16), false)) EXPECT_FALSE(x.half_next);
}

// A prompt's products with F16 weights of one shape over the same activations
// (K and V; gate and up) run as one batched GEMM; Q (another shape) alone. The
// norm still writes the 16-bit activations that Q, K and V read.
TEST(CudaFusion, PromptPairsProductsOfOneShape) {
  std::vector<pi_node> g = attention_nodes(16);
  for (int i = 3; i < 6; ++i) g[i].src[0].type = kF16;
  g[3].src[0].nb[1] = g[4].src[0].nb[1] = g[5].src[0].nb[1] = 2 * kEmbd;
  std::vector<Unit> u = plan(g);
  ASSERT_GE(u.size(), 3u);
  EXPECT_EQ(u[0].kind, UnitKind::kAddNormMul);
  EXPECT_TRUE(u[0].half_next);
  EXPECT_EQ(u[1].kind, UnitKind::kSingle);
  EXPECT_EQ(u[2].kind, UnitKind::kGemmPair);
  EXPECT_EQ(u[2].first, 4u);
  std::vector<pi_node> t = prompt_tail_nodes();
  for (int i = 2; i < 4; ++i) {
    t[i].src[0].type = kF16;
    t[i].src[0].nb[1] = 2 * kEmbd;
  }
  EXPECT_EQ(kinds(plan(t)),
            (std::vector<UnitKind>{UnitKind::kSingle, UnitKind::kSingle, UnitKind::kGemmPair,
                                   UnitKind::kSingle, UnitKind::kSingle}));
  t[3].src[0].type = kQ4_0;  // weights of two types: apart
  EXPECT_EQ(kinds(plan(t))[2], UnitKind::kSingle);
  EXPECT_EQ(kinds(plan(attention_nodes(1)))[1], UnitKind::kMatvecGroup);  // decode: matvec
}

// The attention kernel writes the O projection's 8-bit blocks (the product
// reads its heads as one column); SWIGLU writes the down projection's.
TEST(CudaFusion, DecodeTailQuantizesInAttention) {
  const std::vector<Unit> u = plan(tail_nodes());
  ASSERT_EQ(kinds(u),
            (std::vector<UnitKind>{UnitKind::kSingle, UnitKind::kSingle, UnitKind::kMatvecGroup,
                                   UnitKind::kSingle, UnitKind::kSingle}));
  EXPECT_TRUE(u[0].quantize_next);
  EXPECT_FALSE(u[1].quantize_next);  // the gate and up products quantize it themselves
  EXPECT_TRUE(u[3].quantize_next);
}

// Several tokens: the O projection's columns are tokens, not the attention
// kernel's rows, so the product quantizes its own activations.
TEST(CudaFusion, SeveralTokensKeepTheirQuantize) {
  EXPECT_FALSE(plan(tail_nodes(2))[0].quantize_next);
}

// Heads not of whole 8-bit blocks, or the product reading the output with
// another shape (heads as columns): no quantize in the attention kernel.
TEST(CudaFusion, AttentionQuantizeNeedsWholeBlocksAndOneColumn) {
  std::vector<pi_node> g = tail_nodes();
  g[0].dst.ne[0] = 48;  // D = 48: a block would span two heads
  g[0].dst.ne[1] = kEmbd / 48;
  g[0].dst.nb[1] = 4 * 48;
  g[1].src[1].ne[0] = 48 * (kEmbd / 48);
  EXPECT_FALSE(plan(g)[0].quantize_next);
  g = tail_nodes();
  g[1].src[1] = slot(7, {kD, kHeads});
  EXPECT_FALSE(plan(g)[0].quantize_next);
}

// V's cache write reading what ROPE Q writes must see it written: not one unit.
TEST(CudaFusion, RopeKvNeedsLaterReadsUnwritten) {
  std::vector<pi_node> g = attention_nodes();
  g[9].src[0] = slot(6, {kD, kKvHeads});
  EXPECT_NE(kinds(plan(g)).back(), UnitKind::kRopeKv);
}

// The K cache write must read exactly ROPE K's output (passed in registers).
TEST(CudaFusion, RopeKvNeedsCpyOfRopedK) {
  std::vector<pi_node> g = attention_nodes();
  g[8].src[0] = slot(4, {kD, kKvHeads});
  for (UnitKind k : kinds(plan(g))) EXPECT_NE(k, UnitKind::kRopeKv);
}

// Two outputs sharing bytes: their order would matter.
TEST(CudaFusion, RopeKvNeedsDisjointOutputs) {
  std::vector<pi_node> g = attention_nodes();
  g[9].dst = g[8].dst;
  for (UnitKind k : kinds(plan(g))) EXPECT_NE(k, UnitKind::kRopeKv);
}

TEST(CudaFusion, RopeKvNeedsSameRopeParameters) {
  std::vector<pi_node> g = attention_nodes();
  g[7].f[0] = 500000.0f;
  for (UnitKind k : kinds(plan(g))) EXPECT_NE(k, UnitKind::kRopeKv);
}

// ROPE K's output over Q's input: one block orders the unit's reads before
// its writes. In a slot of its own (the memory plan's layout, kFuseWindow),
// nothing the unit writes is read by it: a grid may take it.
TEST(CudaFusion, RopeKvSpreadsOnlyWithOutputsApartFromInputs) {
  std::vector<pi_node> g = attention_nodes();
  ASSERT_EQ(kinds(plan(g)).back(), UnitKind::kRopeKv);
  EXPECT_FALSE(plan(g).back().spread);
  g[7].dst = slot(10, {kD, kKvHeads});
  g[8].src[0] = g[7].dst;
  ASSERT_EQ(kinds(plan(g)).back(), UnitKind::kRopeKv);
  EXPECT_TRUE(plan(g).back().spread);
}

// A quantized cache is not written by the unit (nor, today, by the backend).
TEST(CudaFusion, RopeKvNeedsFloatCache) {
  std::vector<pi_node> g = attention_nodes();
  g[9].dst.type = 8;  // Q8_0
  for (UnitKind k : kinds(plan(g))) EXPECT_NE(k, UnitKind::kRopeKv);
}

// An F16 model's O projection (slot 7 -> 8), the residual ADD (slot 9) into
// slot 0, RMS_NORM into slot 1, MUL by the weight row into slot 2, and
// `products` F16 products over slot 2 (Q, K, V; gate, up) into slots 3...,
// vectors of e values in slots of 64 KB; k1 > 0: the first product reads k1
// values (a down projection's rows; e when 0).
std::vector<pi_node> f16_norm_nodes(int products = 3, int64_t e = kEmbd, int64_t k1 = 0) {
  const auto at = [e](int s, int64_t n = 0) {
    return tensor(kF32, kArena, 65536 * static_cast<uint64_t>(s), {n > 0 ? n : e});
  };
  std::vector<pi_node> g;
  const int64_t in = k1 > 0 ? k1 : e;
  g.push_back(node(PI_OP_MUL_MAT, {tensor(kF16, kWeights, 0, {in, e}), at(7, in)}, at(8)));
  g.push_back(node(PI_OP_ADD, {at(8), at(9)}, at(0)));
  g.push_back(node(PI_OP_RMS_NORM, {at(0)}, at(1)));
  g.push_back(node(PI_OP_MUL, {at(1), tensor(kF32, kWeights, 1 << 26, {e})}, at(2)));
  for (int p = 0; p < products; ++p) {
    const uint64_t w = static_cast<uint64_t>(2 + p) << 26;
    g.push_back(node(PI_OP_MUL_MAT, {tensor(kF16, kWeights, w, {e, e}), at(2)}, at(3 + p)));
  }
  return g;
}

// The residual ADD goes into the product before it, the norm into the
// products after it: no norm kernel.
TEST(CudaFusion, F16NormFoldsIntoProducts) {
  for (int products : {1, 2, 3}) {
    const std::vector<Unit> u = plan(f16_norm_nodes(products));
    ASSERT_EQ(kinds(u), (std::vector<UnitKind>{UnitKind::kMatvecAdd, UnitKind::kNormMatvec}))
        << products << " products";
    EXPECT_EQ(u[0].count, 2u);
    EXPECT_EQ(u[1].first, 2u);
    EXPECT_EQ(u[1].count, 2u + products);
    EXPECT_FALSE(u[0].quantize_next || u[1].quantize_next);
  }
  // A down projection's rows before the ADD (conformance's NormFold lengths).
  for (const int64_t k1 : {6176, 14368}) {
    EXPECT_EQ(kinds(plan(f16_norm_nodes(3, k1 == 6176 ? 2080 : 4096, k1))),
              (std::vector<UnitKind>{UnitKind::kMatvecAdd, UnitKind::kNormMatvec}))
        << k1;
  }
  // Rows past what the register-resident kernel holds: the norm stays a kernel.
  EXPECT_EQ(kinds(plan(f16_norm_nodes(3, 4096)))[1], UnitKind::kNormMatvec);
  EXPECT_EQ(
      kinds(plan(f16_norm_nodes(3, 4128))),
      (std::vector<UnitKind>{UnitKind::kSingle, UnitKind::kAddNormMul, UnitKind::kMatvecGroup}));
}

// Without the norm's fold the ADD stays with the norm kernel.
TEST(CudaFusion, MatvecAddOnlyBeforeAFoldedNorm) {
  std::vector<pi_node> g = f16_norm_nodes();
  g[3].dst = g[1].dst;  // MUL's output over x, which every block reads
  EXPECT_EQ(kinds(plan(g)), (std::vector<UnitKind>{UnitKind::kSingle, UnitKind::kAddNormMul,
                                                   UnitKind::kMatvecGroup}));
}

// Outputs over what other blocks read or write, or vectors not 16-byte
// aligned: the norm stays a kernel of its own.
TEST(CudaFusion, NormFoldNeedsOutputsApartAndAlignment) {
  const auto folds = [](const std::vector<pi_node>& g) {
    const std::vector<UnitKind> k = kinds(plan(g));
    return std::find(k.begin(), k.end(), UnitKind::kNormMatvec) != k.end();
  };
  ASSERT_TRUE(folds(f16_norm_nodes()));
  std::vector<pi_node> g = f16_norm_nodes();
  g[5].dst = g[2].dst;  // K's rows over the norm's output
  EXPECT_FALSE(folds(g));
  g = f16_norm_nodes();
  g[2].dst = g[3].src[0] = g[3].dst;  // the norm's two outputs the same elements: fine
  EXPECT_TRUE(folds(g));
  g[2].dst.offset += 16;  // ... partly overlapping: not
  g[3].src[0] = g[2].dst;
  EXPECT_FALSE(folds(g));
  g = f16_norm_nodes();
  g[3].src[1].offset += 4;  // the weight row off 16 bytes
  EXPECT_FALSE(folds(g));
  g = f16_norm_nodes();
  g[4].src[0].offset += 2;  // Q's rows off 16 bytes (the staged kernel's)
  EXPECT_FALSE(folds(g));
}

// The residual read before the product's output is written may not share
// its bytes; the ADD may write over the residual's very elements.
TEST(CudaFusion, MatvecAddNeedsResidualApartFromProduct) {
  std::vector<pi_node> g = f16_norm_nodes();
  g[1].dst = g[1].src[1];  // sum over the residual: one thread, read then write
  g[2].src[0] = g[1].dst;
  EXPECT_EQ(kinds(plan(g))[0], UnitKind::kMatvecAdd);
  g = f16_norm_nodes();
  g[1].src[1] = g[0].dst;  // ADD(d, d)
  EXPECT_NE(kinds(plan(g))[0], UnitKind::kMatvecAdd);
}

// f16_norm_nodes with the product before the norm of weight type `before`
// and the products after it of type `after` (quantized: 8-bit activations),
// vectors of llama-8b's 4,096 values; k1 > 0: the first product's rows (a
// down projection's).
std::vector<pi_node> quant_norm_nodes(uint32_t before, uint32_t after, int products = 3,
                                      int64_t e = 4096, int64_t k1 = 0) {
  std::vector<pi_node> g = f16_norm_nodes(products, e, k1);
  for (size_t i = 0; i < g.size(); ++i) {
    pi_tensor& w = g[i].src[0];
    if (g[i].op == PI_OP_MUL_MAT)
      w = tensor(i == 0 ? before : after, kWeights, w.offset, {i == 0 ? w.ne[0] : e, e});
  }
  return g;
}

bool norm_q(const std::vector<pi_node>& g) {
  const std::vector<Unit> u = plan(g);
  return u[0].kind == UnitKind::kMatvecNormQ;
}

// Quantized products of rows up to kMaxNormFoldQK values make their 8-bit
// activations from the norm's input themselves, and the product before the
// norm does the ADD: no norm kernel (llama-1b's 2,048 values).
TEST(CudaFusion, QuantizedNormFoldsIntoProducts) {
  for (uint32_t t : {kQ4_0, kQ4_K, kQ5_K, kQ6_K}) {
    for (int products : {1, 2, 3}) {
      const std::vector<Unit> u = plan(quant_norm_nodes(kQ4_K, t, products, 2048));
      ASSERT_EQ(kinds(u), (std::vector<UnitKind>{UnitKind::kMatvecAdd, UnitKind::kNormMatvec}))
          << t << ", " << products << " products";
      EXPECT_EQ(u[1].count, 2u + products);
      EXPECT_FALSE(u[0].quantize_next || u[1].quantize_next);
    }
  }
  // Any quantized product before the norm adds the residual (Q8_0 too).
  EXPECT_EQ(kinds(plan(quant_norm_nodes(kQ8_0, kQ4_K, 3, 2048)))[0], UnitKind::kMatvecAdd);
  // Conformance's NormFold lengths: Q4_0 rows of 2,080 values, a down
  // projection's 8,192-value Q6_K rows before the norm.
  const std::vector<UnitKind> folded{UnitKind::kMatvecAdd, UnitKind::kNormMatvec};
  EXPECT_EQ(kinds(plan(quant_norm_nodes(kQ4_0, kQ4_0, 3, 2080))), folded);
  EXPECT_EQ(kinds(plan(quant_norm_nodes(kQ6_K, kQ4_K, 3, 2048, 8192))), folded);
  // V in Q6_K after Q and K in Q4_K (llama.cpp's Q4_K_M): one unit, one
  // launch of both types; in either order.
  for (const auto& [qk, v] : {std::pair{kQ4_K, kQ6_K}, std::pair{kQ6_K, kQ4_K}}) {
    std::vector<pi_node> g = quant_norm_nodes(kQ4_K, qk, 3, 2048);
    g[6].src[0] = tensor(v, kWeights, g[6].src[0].offset, {2048, 2048});
    const std::vector<Unit> u = plan(g);
    ASSERT_EQ(kinds(u), folded) << qk << ", " << v;
    EXPECT_EQ(u[1].count, 5u);
  }
  // V of a type one launch does not take with Q and K's: Q and K fold, V (a
  // launch of its own) folds again from what the unit leaves in the
  // activation cache.
  for (const auto& [qk, v] : {std::pair{kQ4_0, kQ6_K}, std::pair{kQ4_K, kQ4_0}}) {
    std::vector<pi_node> g = quant_norm_nodes(kQ4_K, qk, 3, 2048);
    g[6].src[0] = tensor(v, kWeights, g[6].src[0].offset, {2048, 2048});
    EXPECT_EQ(kinds(plan(g)), (std::vector<UnitKind>{UnitKind::kMatvecAdd, UnitKind::kNormMatvec,
                                                     UnitKind::kSingle}))
        << qk << ", " << v;
  }
}

// Q8_0 products read residual codes, which the fold does not make; rows past
// kMaxNormFoldQK values do not fit the block's shared memory: the norm kernel.
TEST(CudaFusion, QuantizedNormFoldNeedsShortRowsAndNoResidualCodes) {
  const std::vector<UnitKind> kernel{UnitKind::kSingle, UnitKind::kAddNormMul,
                                     UnitKind::kMatvecGroup};
  EXPECT_EQ(kinds(plan(quant_norm_nodes(kQ4_K, kQ8_0, 3, 2048))), kernel);
  EXPECT_EQ(kinds(plan(quant_norm_nodes(kQ4_0, kQ4_0, 3, 4160))), kernel);
  EXPECT_EQ(kinds(plan(quant_norm_nodes(kQ4_0, kQ4_0, 3, 4096)))[1], UnitKind::kNormMatvec);
}

// Where the product before the norm could also take it (kMatvecNormQ, rows of
// 4,096-8,192), Q4_K and Q6_K products after the norm keep that and Q4_0
// products fold it (measured, fusion.cpp's norm_before_kquants); Q5_K
// products fold it as Q4_0's (not measured).
TEST(CudaFusion, QuantizedNormFoldOrEpilogueByType) {
  EXPECT_TRUE(norm_q(quant_norm_nodes(kQ4_0, kQ4_K)));
  EXPECT_TRUE(norm_q(quant_norm_nodes(kQ4_0, kQ6_K)));
  for (uint32_t t : {kQ4_0, kQ5_K}) {
    EXPECT_EQ(kinds(plan(quant_norm_nodes(kQ4_K, t))),
              (std::vector<UnitKind>{UnitKind::kMatvecAdd, UnitKind::kNormMatvec}))
        << t;
  }
  // Past kMaxNormFoldQK, Q4_0 products take the epilogue.
  EXPECT_TRUE(norm_q(quant_norm_nodes(kQ4_0, kQ4_0, 3, 8192)));
}

// The ADD, RMS_NORM and MUL go into the quantized product before them, which
// writes the blocks the products after it read (no norm kernel, no quantize).
TEST(CudaFusion, QuantizedProductTakesTheNormAfterIt) {
  for (int products : {1, 2, 3}) {
    const std::vector<Unit> u = plan(quant_norm_nodes(kQ4_0, kQ4_K, products));
    ASSERT_EQ(u.size(), 2u) << products << " products";
    EXPECT_EQ(u[0].kind, UnitKind::kMatvecNormQ);
    EXPECT_EQ(u[0].count, 4u);
    EXPECT_TRUE(u[0].quantize_next);
    EXPECT_FALSE(u[0].quantize_residual);
    EXPECT_EQ(u[1].kind, products == 1 ? UnitKind::kSingle : UnitKind::kMatvecGroup);
    EXPECT_EQ(u[1].first, 4u);
  }
  // Q8_0 before the norm writes the same blocks; Q8_0 after it would read
  // residual codes, which the product does not write.
  EXPECT_TRUE(norm_q(quant_norm_nodes(kQ8_0, kQ4_K)));
  EXPECT_EQ(
      kinds(plan(quant_norm_nodes(kQ4_0, kQ8_0))),
      (std::vector<UnitKind>{UnitKind::kSingle, UnitKind::kAddNormMul, UnitKind::kMatvecGroup}));
  // V of another type: Q and K in one launch, V in its own, over the same blocks.
  std::vector<pi_node> g = quant_norm_nodes(kQ4_0, kQ4_K);
  g[6].src[0] = tensor(kQ8_0, kWeights, g[6].src[0].offset, {4096, 4096});
  EXPECT_EQ(kinds(plan(g)), (std::vector<UnitKind>{UnitKind::kMatvecNormQ, UnitKind::kMatvecGroup,
                                                   UnitKind::kSingle}));
  // V in Q6_K with Q and K in Q4_K (llama.cpp's Q4_K_M): the three in one launch.
  g[6].src[0] = tensor(kQ6_K, kWeights, g[6].src[0].offset, {4096, 4096});
  const std::vector<Unit> mixed = plan(g);
  ASSERT_EQ(kinds(mixed), (std::vector<UnitKind>{UnitKind::kMatvecNormQ, UnitKind::kMatvecGroup}));
  EXPECT_EQ(mixed[1].count, 3u);
  // F16 after it: the F16 fold; F16 before it: the norm kernel.
  EXPECT_FALSE(norm_q(quant_norm_nodes(kQ4_0, kF16)));
  EXPECT_FALSE(norm_q(quant_norm_nodes(kF16, kQ4_K)));
}

// A counter per 32 rows, four blocks' sums per float4: rows a multiple of
// 128, at most kMaxNormQRows; shorter rows than kMinNormQRows (llama-1b's
// 2,048) fold the norm into the products after it instead.
TEST(CudaFusion, QuantizedNormNeedsLongWholeBlockGroups) {
  EXPECT_TRUE(norm_q(quant_norm_nodes(kQ4_0, kQ4_K, 3, 4096)));
  EXPECT_TRUE(norm_q(quant_norm_nodes(kQ4_0, kQ4_K, 3, 8192)));
  EXPECT_FALSE(norm_q(quant_norm_nodes(kQ4_0, kQ4_0, 3, 8320)));
  EXPECT_FALSE(norm_q(quant_norm_nodes(kQ4_0, kQ4_0, 3, 4160)));
  EXPECT_EQ(kinds(plan(quant_norm_nodes(kQ4_0, kQ4_K, 3, 2048))),
            (std::vector<UnitKind>{UnitKind::kMatvecAdd, UnitKind::kNormMatvec}));
}

// The sum is written while the product's warps read its inputs, the norm's
// outputs while the next products' warps write theirs.
TEST(CudaFusion, QuantizedNormNeedsOutputsApart) {
  ASSERT_TRUE(norm_q(quant_norm_nodes(kQ4_0, kQ4_K)));
  std::vector<pi_node> g = quant_norm_nodes(kQ4_0, kQ4_K);
  g[1].dst = g[2].src[0] = g[0].src[1];  // the sum over the product's activations
  EXPECT_FALSE(norm_q(g));
  g = quant_norm_nodes(kQ4_0, kQ4_K);
  g[5].dst = g[2].dst;  // K's rows over RMS_NORM's output
  EXPECT_FALSE(norm_q(g));
  g = quant_norm_nodes(kQ4_0, kQ4_K);
  g[4].dst = g[1].dst;  // Q's rows over the sum, which the norm's outputs are made of
  EXPECT_FALSE(norm_q(g));
  g = quant_norm_nodes(kQ4_0, kQ4_K);
  g[1].src[1] = g[0].dst;  // ADD(d, d): the residual is the product's output
  EXPECT_FALSE(norm_q(g));
  g = quant_norm_nodes(kQ4_0, kQ4_K);
  g[1].dst = g[2].src[0] = g[1].src[1];  // the sum over the residual's very elements
  EXPECT_TRUE(norm_q(g));
  g = quant_norm_nodes(kQ4_0, kQ4_K);
  g[2].dst = g[3].src[0] = g[3].dst;  // the norm's two outputs the same elements
  EXPECT_TRUE(norm_q(g));
  g[3].dst.offset += 16;  // ... partly overlapping: not
  g[4].src[1] = g[5].src[1] = g[6].src[1] = g[3].dst;
  EXPECT_FALSE(norm_q(g));
}

}  // namespace
}  // namespace polyinfer::cuda
