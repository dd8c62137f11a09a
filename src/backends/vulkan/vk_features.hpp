// What an opened device offers the shaders beyond Vulkan 1.2, as the op
// planners see it (vk_ops.cpp, vk_matvec_plan.cpp).
#pragma once
#include <cstdint>

namespace polyinfer::vk {

struct Features {
  bool subgroup_arith = false;  // subgroupAdd in compute shaders
  uint32_t subgroup_size = 0;
  // With subgroup_arith: shuffles in compute shaders and subgroups of 8 to 64
  // invocations (so that the workgroups that use them, of 64, 256 or 1,024, are
  // whole subgroups): the 8-bit codes of the fused norms, the decode attention
  // and SWIGLU + quantize made by eight invocations per block
  // (shaders/q8_lanes.glsl).
  bool subgroup_lanes8 = false;
  // The Vulkan memory model enabled (vulkanMemoryModel with device scope):
  // a product's workgroups read each other's rows through the count's
  // release and acquire (shaders/norm_blocks.glsl, vk_fusion.hpp's Unit::norm).
  bool memory_model = false;
  // VK_KHR_shader_integer_dot_product enabled: 8-bit activations in the
  // matrix-vector kernel.
  bool int_dot = false;
  // VK_NV_cooperative_matrix with F16 products (vk_coopmat.hpp): prefill
  // products of F16 and quantized weights on tensor cores
  // (shaders/mul_mat_cm.comp); off with the device option coopmat=0 or
  // POLYINFER_VULKAN_COOPMAT=0.
  bool coopmat = false;
  // Consecutive nodes as one dispatch (vk_fusion.hpp); off with the device
  // option fusion=0 or POLYINFER_VULKAN_FUSION=0.
  bool fusion = false;
  // With int_dot and fusion: a MUL_MAT's activations quantized once, by a
  // dispatch of their own, instead of in every workgroup; off with
  // prequant=0 or POLYINFER_VULKAN_PREQUANT=0.
  bool prequant = false;
  // ... by a quantize dispatch of their own for rows of at least this many
  // values (option prequant_min_k=N); codes that a fused norm writes
  // (vk_fusion.hpp) are read whatever the rows' length. On
  // the H200 (session 9, tg128): llama-8b Q4_0 126.7 tok/s with every product
  // prequantized, 105.8 with none; llama-1b Q4_0 (rows of 2,048; the down
  // projection's 8,192) 334.6 with only the down projection's, 322.8 with all,
  // 323.2 with none: below 4,096 values a quantize dispatch and its barrier
  // cost more than the workgroups' own quantizing.
  uint32_t prequant_min_k = 4096;
  uint32_t max_shared = 16384;  // maxComputeSharedMemorySize (bytes)
  // Most invocations of a one-dimensional workgroup (the smaller of
  // maxComputeWorkGroupInvocations and maxComputeWorkGroupSize[0]).
  uint32_t max_workgroup = 128;
};

}  // namespace polyinfer::vk
