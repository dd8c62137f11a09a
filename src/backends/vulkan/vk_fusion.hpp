// Which consecutive nodes of a graph the Vulkan backend runs as one dispatch,
// and which matrix-vector products read activations quantized once by a
// dispatch of their own (vk_graph_plan.cpp turns both into dispatches). A
// decode step is ~19 small dispatches per layer, each behind a barrier; the
// fused ones cut that. Host code over the node list only: buffers are
// compared by handle (a pi_buffer is one sub-allocation, so two handles never
// share bytes), never looked into, so tests/unit/test_vk_fusion.cpp builds it
// without Vulkan.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/vulkan/vk_features.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::vk {

enum class UnitKind : uint8_t {
  kSingle,      // one node, its op's own dispatch
  kNormMul,     // RMS_NORM(x), MUL(norm, w): shaders/norm.comp, FUSE 1
  kAddNormMul,  // ADD(a, b), RMS_NORM(sum), MUL(norm, w): shaders/norm.comp, FUSE 2
  kRopeCpy,     // ROPE(x), CPY(roped x -> KV cache): shaders/rope.comp, CACHE != 0
  // SWIGLU whose output the next MUL_MAT reads as 8-bit activations: the
  // quantization dispatch computes it (shaders/quantize_q8.comp, SWIGLU 1),
  // writing the output and the product's codes; the product quantizes nothing.
  kSwigluQuant,
  // A ROPE or CPY that an earlier product computes in its epilogue
  // (Unit::rope, Unit::cache), the ADD after one (Unit::norm), or the up
  // product and SWIGLU after a gate product (Unit::swiglu), or the RMS_NORM
  // and MUL beside the products after such an ADD whose outputs nothing
  // reads (Unit::norm): no dispatch of its own.
  kFolded,
};

// Most nodes in one unit (at most graph/memory_plan.hpp's kFuseWindow, which
// keeps a unit's outputs off its inputs in a planned graph; the rules below
// check it anyway, for graphs built by hand).
constexpr uint32_t kMaxUnitNodes = 3;
// Longest row the fused norm holds in registers (shaders/norm.comp: R = 32
// values per invocation of 256).
constexpr int64_t kMaxFusedNormRow = 8192;

// The fused norm's workgroup (shaders/norm.comp's WG) for rows of k values:
// 1,024 invocations for rows of 4,096 and more where the device has them,
// else 256. A decode step's norm is one workgroup whose every step is
// latency. On the H200 (session 30, tg128, two rounds) llama-8b Q4_K_M's
// graph took 3,709 us against 3,824 with 256 (4 values per invocation, not
// 16); with 1,024 for rows of 2,048, llama-1b Q4_0 took 965 us against 960
// and Q4_K_M 1,186 against 1,165.
uint32_t fused_norm_workgroup(int64_t k, const Features& features);

// R of shaders/norm.comp for a fused row of k values (at most
// kMaxFusedNormRow) in workgroups of wg: values per invocation, the power of
// two that holds the row. Registers for this row, not the longest: on the
// H200 (session 9) llama-1b Q4_0 tg128 334.6 tok/s against 279.9 with R = 32
// for its rows of 2,048 values.
uint32_t fused_norm_values(int64_t k, uint32_t wg);

struct Unit {
  uint32_t first = 0;  // index of the unit's first node
  uint32_t count = 1;  // its nodes: [first, first + count)
  UnitKind kind = UnitKind::kSingle;
  // A MUL_MAT with 8-bit activations (Features::prequant) that reads them as
  // codes the recording made once (shaders/quantize_q8.comp's blocks): from
  // a fused unit before it (writes_codes, kSwigluQuant), from a product's
  // blocks (Unit::norm, Unit::swiglu), from the product before it over the
  // same src1, or, for rows of at least
  // Features::prequant_min_k values, from a dispatch of its own (quantize).
  // Otherwise its workgroups quantize the activations themselves.
  bool reads_codes = false;
  bool quantize = false;
  // A norm unit whose MUL output, or a FLASH_ATTN whose output, the next
  // node, a MUL_MAT with 8-bit activations, reads: its dispatch also writes
  // that product's codes (shaders/norm.comp, flash_attn.comp USE_CODES).
  bool writes_codes = false;
  // A product with 8-bit activations in shaders/mul_mat_vec_direct.comp
  // that also does a later node's work from the sums it holds (0: none; no
  // unit folds node 0; where its rows go one per workgroup, K-quants, a ROPE
  // pair's two workgroups meet through a word of scratch): `rope`, a
  // normal-mode ROPE over its output seen as [D, H, T], and/or `cache`, the
  // CPY into a float KV cache of that ROPE's output or of its own (llama's
  // Q; K and its cache write; V's cache write). The ROPE and the CPY are then kFolded
  // units where they stand; each is moved only over nodes independent of
  // it. A decode layer's ROPEs and cache writes thus need no dispatch and no
  // barrier between the Q/K/V products and the attention.
  uint32_t rope = 0, cache = 0;
  // Such a product (no rope or cache; one column of whole 32-value blocks)
  // whose output the ADD at `norm` reads with a residual, the ADD's sum
  // normed by the RMS_NORM and MUL after it, whose output the next product
  // reads as codes (llama's O and down projections, the residual add and the
  // next norm): the product's workgroups do the ADD and write the codes of
  // sum · w a block of 32 rows at a time (shaders/norm_blocks.glsl), so the
  // ADD is a kFolded unit, and the RMS_NORM and MUL a kNormMul unit that
  // writes no codes and that the next products need not wait for (0: none).
  // Where both their outputs are scratch (abi.h's PI_NODE_SCRATCH) and only
  // products reading those codes read them, the RMS_NORM and MUL are a
  // kFolded unit, no dispatch at all. On the H200 (session 37, GPU span of a
  // decode step, two rounds) leaving these dispatches out made llama-1b Q4_0
  // 820 us against 845, llama-8b Q4_0 2,546 against 2,625, llama-1b Q4_K_M
  // 1,016 against 1,028, llama-8b Q4_K_M 3,442 against 3,470; this rule, on
  // another machine, llama-8b Q4_0 2,553 and llama-8b Q4_K_M 3,470.
  uint32_t norm = 0;
  // Such a product (gate; no rope, cache or norm) and the next node, a product
  // alike over the same codes (up; matvec_direct_alike), whose outputs the
  // SWIGLU at `swiglu` (= first + 2) takes as gate and up, and whose output
  // the next product (down) reads as codes: one dispatch runs both products
  // and SWIGLU, 32 rows at a time, writing the down product's codes
  // (shaders/swiglu_blocks.glsl); the up product and SWIGLU are kFolded units
  // (0: none).
  uint32_t swiglu = 0;
  // A product reading those codes: the RMS_NORM node whose scale r it applies
  // to its sums (shaders/norm_scale.glsl; 0: none).
  uint32_t scale_norm = 0;

  bool operator==(const Unit&) const = default;
};

// The input of ADD node `add` other than x (the residual that a product's
// norm blocks add to its output x: Unit::norm).
const pi_tensor& add_residual(const pi_node& add, const pi_tensor& x);

// The graph's nodes cut into units, in order; every node is in exactly one.
// Without features.fusion, one kSingle unit per node and no quantize.
std::vector<Unit> plan_units(const pi_graph& g, const Features& features);

}  // namespace polyinfer::vk
