// What an opened device offers the shaders beyond Vulkan 1.2, as the op
// planners see it (vk_ops.cpp, vk_matvec_plan.cpp).
#pragma once
#include <cstdint>

namespace polyinfer::vk {

struct Features {
  bool subgroup_arith = false;  // subgroupAdd in compute shaders
  uint32_t subgroup_size = 0;
  // VK_KHR_shader_integer_dot_product enabled: 8-bit activations in the
  // matrix-vector kernel.
  bool int_dot = false;
  // Consecutive nodes as one dispatch (vk_fusion.hpp); off with the device
  // option fusion=0 or POLYINFER_VULKAN_FUSION=0.
  bool fusion = false;
  // With int_dot and fusion: a MUL_MAT's activations quantized once, by a
  // dispatch of their own, instead of in every workgroup; off with
  // prequant=0 or POLYINFER_VULKAN_PREQUANT=0.
  bool prequant = false;
  uint32_t max_shared = 16384;  // maxComputeSharedMemorySize (bytes)
};

}  // namespace polyinfer::vk
