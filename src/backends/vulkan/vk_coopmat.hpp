// Cooperative matrices (VK_NV_cooperative_matrix) for the prefill GEMM
// (shaders/mul_mat_cm.comp): whether a device runs that shader, and the
// features to enable for it when the device is created.
#pragma once
#include <vulkan/vulkan.h>

namespace polyinfer::vk {

// True when the device lists 16 x 16 x 16 products of F16 matrices summed in
// float32 at subgroup scope (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV),
// has the cooperativeMatrix, shaderFloat16 and vulkanMemoryModel features (the
// SPIR-V that glslc writes for the extension declares the Vulkan memory
// model), subgroups of 32 with basic operations and cooperative matrices in
// compute shaders, and `shared_bytes` of shared memory per workgroup.
bool coopmat_usable(VkInstance instance, VkPhysicalDevice pd, uint32_t shared_bytes);

// The feature structs to chain into VkDeviceCreateInfo (all three features on)
// and the extension to enable with them.
struct CoopmatEnable {
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceShaderFloat16Int8Features f16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  static constexpr const char* kExtension = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;

  // Links the three structs in front of `next` and returns the head of the chain.
  void* chain(void* next);
};

// Shared memory that mul_mat_cm.comp declares with 128 columns per tile (its
// ws, as and cs arrays), the most of its variants.
constexpr uint32_t kCoopmatSharedBytes = 128 * 40 * 2 + 128 * 40 * 2 + 8 * 256 * 4;

}  // namespace polyinfer::vk
