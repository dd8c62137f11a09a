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
};

// Most nodes in one unit (at most graph/memory_plan.hpp's kFuseWindow, which
// keeps a unit's outputs off its inputs in a planned graph; the rules below
// check it anyway, for graphs built by hand).
constexpr uint32_t kMaxUnitNodes = 3;
// Longest row the fused norm holds in registers (shaders/norm.comp: R = 32
// values per invocation of 256).
constexpr int64_t kMaxFusedNormRow = 8192;

struct Unit {
  uint32_t first = 0;  // index of the unit's first node
  uint32_t count = 1;  // its nodes: [first, first + count)
  UnitKind kind = UnitKind::kSingle;
  // A MUL_MAT with 8-bit activations (Features::prequant) whose src1 is not
  // the one the previous unit's codes were made from: a dispatch quantizing
  // src1 (shaders/quantize_q8.comp) goes before it. The next MUL_MATs over the
  // same src1 read the same codes.
  bool quantize = false;
};

// The graph's nodes cut into units, in order; every node is in exactly one.
// Without features.fusion, one kSingle unit per node and no quantize.
std::vector<Unit> plan_units(const pi_graph& g, const Features& features);

}  // namespace polyinfer::vk
