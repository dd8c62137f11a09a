// The launches of fused units (fusion.hpp): several consecutive nodes, one
// kernel. Each returns a message on failure, nullptr on success.
#pragma once

#include <cublas_v2.h>
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
  // Also write the last output in 16 bits at the start of scratch for the
  // prompt GEMM after the unit (Unit::half_next), and record it in act_cache.
  bool half_next;
  bool half_bf16;
  cudaStream_t stream;
  cublasHandle_t cublas;
  uint8_t* scratch;
  ActQuantCache* act_cache;
  // Each node's per-token value in device memory, or nullptr (LaunchContext).
  const int64_t* field[kMaxUnitNodes] = {};
  // Per node: bit j set when no node of any submit writes its src[j]'s buffer
  // (pi_buffer_s::kernel_written).
  uint32_t constant_srcs[kMaxUnitNodes] = {};
  // The stream's kMaxNormQRows / 32 zeroed counters (kMatvecNormQ).
  unsigned* norm_counts = nullptr;
  int sm_count = 0;  // the device's multiprocessors
};

// No node of any submit writes the weights (src[0]) of the unit's nodes
// [first, last) (last 0: to the unit's end): the products may load them
// before their PDL wait (MatvecEnv::weights_early).
inline bool weights_constant(const UnitContext& c, uint32_t first = 0, uint32_t last = 0) {
  bool constant = true;
  for (uint32_t k = first; k < (last > 0 ? last : c.count); ++k)
    constant &= (c.constant_srcs[k] & 1u) != 0;
  return constant;
}

// [ADD,] RMS_NORM, MUL(norm, w): one block per row writes every node's dst.
const char* launch_norm_mul(const UnitContext& c);
// SWIGLU whose output the next MUL_MAT reads converted: 8-bit blocks for the
// matrix-vector path (quantize_next), 16-bit values for the GEMM (half_next).
const char* launch_swiglu_next(const UnitContext& c);
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
// Two prompt products as one strided-batched GEMM (fusion.hpp's kGemmPair);
// kLaunchNodes when their weights or outputs lie apart by different strides.
const char* launch_gemm_pair(const UnitContext& c);
// RMS_NORM, MUL and the F16 products after them (fusion.hpp's kNormMatvec).
const char* launch_norm_matvec(const UnitContext& c);
// A quantized product and the ADD, RMS_NORM and MUL after it (fusion.hpp's
// kMatvecNormQ).
const char* launch_matvec_norm_q(const UnitContext& c);

// What launch_matvec_add, launch_gemm_pair, launch_norm_matvec and
// launch_matvec_norm_q return when their kernel does not take the unit (a buffer not 16-byte
// aligned, activations not at the start of scratch): nothing was launched, and the caller launches
// the unit's nodes one by one.
extern const char* const kLaunchNodes;

}  // namespace polyinfer::cuda
