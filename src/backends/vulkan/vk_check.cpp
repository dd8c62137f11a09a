#include "backends/vulkan/vk_check.hpp"

#include <mutex>

namespace polyinfer::vk {
namespace {
std::mutex g_mutex;
std::string g_validation_errors;
}  // namespace

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default:
      return "VkResult error";
  }
}

void check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  const bool oom = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY;
  throw VkError(oom ? PI_ERR_OUT_OF_MEMORY : PI_ERR_DEVICE,
                std::string(what) + " failed: " + result_name(r) + " (" + std::to_string(r) + ")");
}

std::string take_validation_errors() {
  std::lock_guard lock(g_mutex);
  std::string s;
  s.swap(g_validation_errors);
  return s;
}

void add_validation_error(const std::string& message) {
  std::lock_guard lock(g_mutex);
  if (!g_validation_errors.empty()) g_validation_errors += "; ";
  g_validation_errors += message;
}

}  // namespace polyinfer::vk
