// Which consecutive nodes of a graph the CUDA backend launches as one unit
// (fewer kernels per decode step: each launch costs 2-3 us on the H200 even
// when it moves a few KB). Pure host-side planning over the node list (no
// CUDA header: tests/unit/test_cuda_fusion.cpp builds it without the
// toolkit); the launches are declared in fused_ops.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

enum class UnitKind : uint8_t {
  kSingle,       // one node, its op's own launch
  kNormMul,      // RMS_NORM(x), MUL(norm, w): y = x / rms(x) * w
  kAddNormMul,   // ADD(a, b), RMS_NORM(sum), MUL(norm, w)
  kMatvecGroup,  // 2-3 MUL_MATs over the same activations: one matrix-vector launch
  kRopePair,     // two ROPEs with the same positions and parameters (Q and K)
  kCpyPair,      // two CPYs of the same types (the K and V cache writes)
  kRopeKv,       // ROPE(Q), ROPE(K), CPY(K -> cache), CPY(V -> cache) of one token
  // One F16 or quantized product of one column, ADD(its output, a residual
  // vector): the product's kernel adds the residual to each of its sums. Only
  // where a kNormMatvec follows, which reads the sum.
  kMatvecAdd,
  // RMS_NORM(x), MUL(norm, w), 1-3 products over the MUL's output, one
  // column, F16 or quantized (Q4_0, Q4_K, Q5_K, Q6_K of rows up to kMaxNormFoldQK):
  // the products' kernel dots x · w (quantized: each block makes the 8-bit
  // blocks of x · w in its shared memory) and scales by the norm's factor,
  // with no norm kernel before it (matvec.hpp's MatvecFold).
  kNormMatvec,
  // Two prompt products (the GEMM path) with F16 or BF16 weights of one shape
  // over the same activations (K and V; gate and up): one strided-batched
  // GEMM, twice the blocks of each (llama-8b's K and V of 1,024 rows over 512
  // tokens ran at 360 TFLOP/s one by one).
  kGemmPair,
  // A quantized decode product of one column, ADD(its output, a residual),
  // RMS_NORM(sum), MUL(norm, w): the product's kernel does the ADD and
  // quantizes sum · w per 32 rows with their Σ sum², and the quantized
  // products after it scale their sums by the norm's factor (matvec.hpp's
  // MatvecNormQ): no norm kernel between the products. Preferred to
  // kMatvecAdd + kNormMatvec where K-quant products follow (fusion.cpp).
  kMatvecNormQ,
};

// Most nodes in one unit (at most graph/memory_plan.hpp's kFuseWindow, which
// keeps a unit's outputs off its inputs; tests/unit/test_cuda_fusion.cpp checks).
constexpr uint32_t kMaxUnitNodes = 5;
// Longest row the fused RMS_NORM takes.
constexpr int64_t kMaxFusedNormRow = 8192;
// Most values of Q, and of K and of V each, that the ROPE+KV unit's single
// block holds in registers (4 and 1 pairs per thread of 1,024), and its
// longest head (its rotation table is in shared memory).
constexpr int64_t kMaxRopeKvQ = 8192, kMaxRopeKvKv = 2048, kMaxRopeKvHead = 512;

struct Unit {
  uint32_t first = 0;  // index of the unit's first node
  uint32_t count = 1;  // its nodes: [first, first + count)
  UnitKind kind = UnitKind::kSingle;
  // The unit's last output is the activation of the MUL_MAT that follows,
  // which quantizes it: the fused kernel writes the 8-bit blocks too.
  bool quantize_next = false;
  // ... and its residual codes too (the MUL_MAT's weights are Q8_0).
  bool quantize_residual = false;
  // The unit's last output is the activation of the prompt GEMM that follows
  // (F16, BF16 or quantized weights), which converts it to 16 bits: the fused
  // kernel writes that copy too (BF16 when half_bf16), where its rows allow.
  bool half_next = false;
  bool half_bf16 = false;
  // kRopeKv: no output shares bytes with an input of the unit (other than the
  // roped K that the cache write reads), so its values may be spread over a
  // grid of blocks with no ordering between them (fused_rope_kv.cu).
  bool spread = false;
};

// The graph's nodes cut into units, in order; every node is in exactly one.
// `fuse` false gives one kSingle unit per node (POLYINFER_CUDA_FUSION=0).
std::vector<Unit> plan_units(const pi_graph& g, bool fuse);

// For each node, the index of the first node of its unit.
std::vector<uint32_t> unit_leaders(const std::vector<Unit>& units, uint32_t n_nodes);

}  // namespace polyinfer::cuda
