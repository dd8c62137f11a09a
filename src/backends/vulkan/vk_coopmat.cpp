#include "backends/vulkan/vk_coopmat.hpp"

#include <vector>

#include "backends/vulkan/vk_instance.hpp"

namespace polyinfer::vk {
namespace {

bool features_present(VkPhysicalDevice pd) {
  CoopmatEnable f;  // chain() sets the fields, which the query then overwrites
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = f.chain(nullptr);
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  return f.coopmat.cooperativeMatrix && f.f16.shaderFloat16 && f.memory_model.vulkanMemoryModel;
}

// Subgroups of 32 with basic operations in compute shaders, and cooperative
// matrices in compute shaders.
bool compute_subgroups_of_32(VkPhysicalDevice pd) {
  VkPhysicalDeviceCooperativeMatrixPropertiesNV cm{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  sg.pNext = &cm;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sg;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  return sg.subgroupSize == 32 && (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
         (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
         (cm.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
}

bool lists_f16_shape(VkInstance instance, VkPhysicalDevice pd) {
  auto props = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (props == nullptr) return false;
  uint32_t n = 0;
  if (props(pd, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> list(
      n, VkCooperativeMatrixPropertiesNV{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (props(pd, &n, list.data()) != VK_SUCCESS) return false;
  for (const auto& p : list) {
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 16 &&
        p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        p.scope == VK_SCOPE_SUBGROUP_NV)
      return true;
  }
  return false;
}

}  // namespace

void* CoopmatEnable::chain(void* next) {
  coopmat.cooperativeMatrix = VK_TRUE;
  f16.shaderFloat16 = VK_TRUE;
  memory_model.vulkanMemoryModel = VK_TRUE;
  memory_model.pNext = next;
  f16.pNext = &memory_model;
  coopmat.pNext = &f16;
  return &coopmat;
}

bool coopmat_usable(VkInstance instance, VkPhysicalDevice pd, uint32_t shared_bytes) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(pd, &p);
  return has_device_extension(pd, CoopmatEnable::kExtension) && features_present(pd) &&
         compute_subgroups_of_32(pd) && p.limits.maxComputeSharedMemorySize >= shared_bytes &&
         lists_f16_shape(instance, pd);
}

}  // namespace polyinfer::vk
