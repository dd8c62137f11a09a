// The process-wide Vulkan instance (created on first use, never destroyed:
// plugins are never unloaded) and what each physical device reports.
#pragma once
#include <vulkan/vulkan.h>

#include <string>
#include <vector>

#include "polyinfer/backend/abi.h"

namespace polyinfer::vk {

struct Instance {
  VkInstance instance = VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> devices;  // those reporting Vulkan >= 1.2
  bool validation = false;                // POLYINFER_VULKAN_VALIDATION=1 or =sync
  // =sync: also the layer's synchronization validation. Descriptors then bind
  // each tensor's own bytes (vk_graph_plan.cpp), which the layer takes as the
  // range a dispatch touches.
  bool sync_validation = false;
  std::string error;  // why there is no instance, or ""
};

// The instance; on failure instance == VK_NULL_HANDLE and error says why.
const Instance& instance();

// Fills a pi_device_info for a physical device (kind, memory, ids).
void describe_device(VkPhysicalDevice pd, pi_device_info* out);

bool has_device_extension(VkPhysicalDevice pd, const char* name);

// Integer dot products in shaders (VK_KHR_shader_integer_dot_product), taken
// as the extension.
bool has_int_dot(VkPhysicalDevice pd);
// The Vulkan memory model with device scope (vulkanMemoryModel and
// vulkanMemoryModelDeviceScope, optional features of Vulkan 1.2):
// shaders/norm_blocks.glsl's release and acquire. Device scope too, because
// with the model enabled a shader may use Device scope only with it, and the
// other shaders' atomics are Device scope.
bool has_memory_model(VkPhysicalDevice pd);

}  // namespace polyinfer::vk
