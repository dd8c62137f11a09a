// The launches of fused units (fusion.hpp): several consecutive nodes, one
// kernel. Each returns a message on failure, nullptr on success.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/fusion.hpp"
#include "backends/cuda/view.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

struct ActQuantCache;

// A node's tensors resolved to device addresses.
struct NodeViews {
  View src[PI_MAX_SRC];
  View dst;
};

struct UnitContext {
  const pi_node* nodes;    // the unit's nodes
  const NodeViews* views;  // and their views
  uint32_t count;
  // Also write the last output as 8-bit blocks in scratch for the MUL_MAT
  // after the unit, and record them in act_cache.
  bool quantize_next;
  bool quantize_residual;  // with the residual codes (Unit::quantize_residual)
  bool spread;             // Unit::spread
  cudaStream_t stream;
  uint8_t* scratch;
  ActQuantCache* act_cache;
  // Each node's per-token value in device memory, or nullptr (LaunchContext).
  const int64_t* field[kMaxUnitNodes] = {};
  // Per node: bit j set when no node of any submit writes its src[j]'s buffer
  // (pi_buffer_s::kernel_written).
  uint32_t constant_srcs[kMaxUnitNodes] = {};
};

// No node of any submit writes the weights (src[0]) of the unit's nodes
// [first, c.count): the products may load them before their PDL wait
// (MatvecEnv::weights_early).
inline bool weights_constant(const UnitContext& c, uint32_t first = 0) {
  bool constant = true;
  for (uint32_t k = first; k < c.count; ++k) constant &= (c.constant_srcs[k] & 1u) != 0;
  return constant;
}

// [ADD,] RMS_NORM, MUL(norm, w): one block per row writes every node's dst.
const char* launch_norm_mul(const UnitContext& c);
// SWIGLU whose output is quantized for the next MUL_MAT (quantize_next).
const char* launch_swiglu_quant(const UnitContext& c);
// FLASH_ATTN of one token whose output is quantized for the next MUL_MAT
// (quantize_next): in the decode kernel where it takes the node, else after it.
const char* launch_attn_quant(const UnitContext& c);
// 2-3 MUL_MATs over the same activations (matrix-vector path).
const char* launch_mul_mat_group(const UnitContext& c);
// Two ROPEs with the same positions and parameters.
const char* launch_rope_pair(const UnitContext& c);
// Two CPYs of the same source and destination types.
const char* launch_cpy_pair(const UnitContext& c);
// ROPE(Q), ROPE(K), CPY(K), CPY(V) of one token in one block (fusion.hpp's kRopeKv).
const char* launch_rope_kv(const UnitContext& c);
// An F16 product and the residual ADD after it (fusion.hpp's kMatvecAdd).
const char* launch_matvec_add(const UnitContext& c);
// RMS_NORM, MUL and the F16 products after them (fusion.hpp's kNormMatvec).
const char* launch_norm_matvec(const UnitContext& c);

// What the two launches above return when the direct F16 kernel does not
// take the unit (a buffer not 16-byte aligned): nothing was launched, and
// the caller launches the unit's nodes one by one.
extern const char* const kLaunchNodes;

}  // namespace polyinfer::cuda
