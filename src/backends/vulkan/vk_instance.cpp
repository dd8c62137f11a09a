#include "backends/vulkan/vk_instance.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/vulkan/vk_check.hpp"
#include "backends/vulkan/vk_coopmat.hpp"

namespace polyinfer::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// "1": the layer's default checks; "sync": synchronization validation as well.
const char* validation_requested() {
  const char* v = std::getenv("POLYINFER_VULKAN_VALIDATION");
  if (v != nullptr && std::strcmp(v, "1") == 0) return "1";
  if (v != nullptr && std::strcmp(v, "sync") == 0) return "sync";
  return nullptr;
}

// Validation errors are printed and recorded; the vtable call during which
// they arrive returns PI_ERR_DEVICE with the text, so a test fails on them.
VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  const char* text = data && data->pMessage ? data->pMessage : "(no message)";
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    std::fprintf(stderr, "polyinfer vulkan validation error: %s\n", text);
    add_validation_error(std::string("validation: ") + text);
  } else {
    std::fprintf(stderr, "polyinfer vulkan validation warning: %s\n", text);
  }
  return VK_FALSE;
}

bool layer_available(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

Instance create() {
  Instance inst;
  uint32_t api = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&api);
  if (api < VK_API_VERSION_1_2) {
    inst.error = "the Vulkan loader supports only " + std::to_string(VK_API_VERSION_MAJOR(api)) +
                 "." + std::to_string(VK_API_VERSION_MINOR(api)) + " (needs 1.2)";
    return inst;
  }
  const char* mode = validation_requested();
  inst.validation = mode != nullptr;
  inst.sync_validation = mode != nullptr && std::strcmp(mode, "sync") == 0;
  std::vector<const char*> layers, extensions;
  if (inst.validation) {
    if (!layer_available(kValidationLayer)) {
      inst.error = std::string("POLYINFER_VULKAN_VALIDATION=") + mode + " but " + kValidationLayer +
                   " is not installed (Debian: vulkan-validationlayers)";
      return inst;
    }
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "polyinfer";
  app.pEngineName = "polyinfer";
  app.apiVersion = VK_API_VERSION_1_2;
  VkDebugUtilsMessengerCreateInfoEXT msg{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  msg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
  msg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  msg.pfnUserCallback = on_message;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  if (inst.validation) ci.pNext = &msg;  // also covers vkCreateInstance itself
  const VkValidationFeatureEnableEXT sync =
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync;
  if (inst.sync_validation) {
    features.pNext = &msg;
    ci.pNext = &features;
  }
  const VkResult r = vkCreateInstance(&ci, nullptr, &inst.instance);
  if (r != VK_SUCCESS) {
    inst.instance = VK_NULL_HANDLE;
    inst.error = std::string("vkCreateInstance failed: ") + result_name(r);
    return inst;
  }
  if (inst.validation) {
    auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(inst.instance, "vkCreateDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    if (create_messenger == nullptr ||
        create_messenger(inst.instance, &msg, nullptr, &messenger) != VK_SUCCESS) {
      inst.error = "cannot create the VK_EXT_debug_utils messenger for validation";
      return inst;
    }
  }
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(inst.instance, &n, nullptr);
  std::vector<VkPhysicalDevice> all(n);
  vkEnumeratePhysicalDevices(inst.instance, &n, all.data());
  for (VkPhysicalDevice pd : all) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(pd, &p);
    if (p.apiVersion >= VK_API_VERSION_1_2) inst.devices.push_back(pd);
  }
  if (inst.devices.empty()) {
    inst.error = n == 0 ? "no Vulkan device (no ICD found by the loader)"
                        : "no Vulkan device supports Vulkan 1.2";
  }
  return inst;
}

void copy_str(char* dst, size_t cap, const std::string& s) {
  std::snprintf(dst, cap, "%s", s.c_str());
}

std::string vendor_name(uint32_t id, const char* driver_name) {
  switch (id) {
    case 0x10DE:
      return "NVIDIA";
    case 0x1002:
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x13B5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x106B:
      return "Apple";
    case 0x10005:
      return "Mesa";  // VK_VENDOR_ID_MESA: lavapipe
    default:
      break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%04x", id);
  return driver_name && *driver_name ? std::string(driver_name) + " (" + buf + ")" : buf;
}

}  // namespace

// A function-local static: made once (again after a throw), and after that
// a load and a branch per call, where std::call_once cost every binding of a
// plan a call (10% of planning a llama-1b graph, session 18).
const Instance& instance() {
  static const Instance inst = create();
  return inst;
}

bool has_device_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// Integer dot products in shaders (VK_KHR_shader_integer_dot_product). Core in
// Vulkan 1.3, taken here as the extension: the instance asks for 1.2.
bool has_int_dot(VkPhysicalDevice pd) {
  if (!has_device_extension(pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) return false;
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &dot;
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  return dot.shaderIntegerDotProduct == VK_TRUE;
}

bool has_memory_model(VkPhysicalDevice pd) {
  VkPhysicalDeviceVulkanMemoryModelFeatures mm{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &mm;
  vkGetPhysicalDeviceFeatures2(pd, &f2);
  return mm.vulkanMemoryModel == VK_TRUE && mm.vulkanMemoryModelDeviceScope == VK_TRUE;
}

void describe_device(VkPhysicalDevice pd, pi_device_info* out) {
  std::memset(out, 0, sizeof *out);
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &id;
  id.pNext = &drv;
  const bool has_pci = has_device_extension(pd, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  if (has_pci) drv.pNext = &pci;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  const VkPhysicalDeviceProperties& p = p2.properties;

  copy_str(out->name, sizeof out->name, p.deviceName);
  copy_str(out->vendor, sizeof out->vendor, vendor_name(p.vendorID, drv.driverName));
  // driverInfo is the version string the vendor shows ("535.104.05", "Mesa 22.3.6");
  // the packed driverVersion is vendor-encoded, so it is only the fallback.
  if (drv.driverInfo[0] != '\0') {
    copy_str(out->driver_version, sizeof out->driver_version, drv.driverInfo);
  } else {
    copy_str(out->driver_version, sizeof out->driver_version,
             std::to_string(VK_API_VERSION_MAJOR(p.driverVersion)) + "." +
                 std::to_string(VK_API_VERSION_MINOR(p.driverVersion)) + "." +
                 std::to_string(VK_API_VERSION_PATCH(p.driverVersion)));
  }
  // The optional features the shaders use where the device has them
  // (docs/BACKEND_VULKAN.md), so that `polyinfer backends` shows which paths run.
  std::string version = "Vulkan " + std::to_string(VK_API_VERSION_MAJOR(p.apiVersion)) + "." +
                        std::to_string(VK_API_VERSION_MINOR(p.apiVersion)) + "." +
                        std::to_string(VK_API_VERSION_PATCH(p.apiVersion));
  if (has_int_dot(pd)) version += ", int8 dot";
  if (coopmat_usable(instance().instance, pd, kCoopmatSharedBytes)) version += ", coopmat";
  copy_str(out->compute_version, sizeof out->compute_version, version);
  if (has_pci) {
    std::snprintf(out->bus_id, sizeof out->bus_id, "%04x:%02x:%02x.%x", pci.pciDomain, pci.pciBus,
                  pci.pciDevice, pci.pciFunction);
  }
  if (id.deviceUUID[0] || std::memcmp(id.deviceUUID, id.deviceUUID + 1, VK_UUID_SIZE - 1) != 0)
    std::memcpy(out->uuid, id.deviceUUID, sizeof out->uuid);
  switch (p.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      out->kind = PI_DEVICE_GPU;
      break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      out->kind = PI_DEVICE_IGPU;
      break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      out->kind = PI_DEVICE_CPU;
      break;
    default:
      out->kind = PI_DEVICE_OTHER;
      break;
  }

  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 m2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  const bool has_budget = has_device_extension(pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  if (has_budget) m2.pNext = &budget;
  vkGetPhysicalDeviceMemoryProperties2(pd, &m2);
  const VkPhysicalDeviceMemoryProperties& mp = m2.memoryProperties;
  for (uint32_t h = 0; h < mp.memoryHeapCount; ++h) {
    if (!(mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
    out->memory_total += mp.memoryHeaps[h].size;
    if (has_budget) {
      const VkDeviceSize b = budget.heapBudget[h], u = budget.heapUsage[h];
      out->memory_free += b > u ? b - u : 0;
    } else {
      out->memory_free += mp.memoryHeaps[h].size;  // unknown: the whole heap
    }
  }
  out->host_visible = 0;  // buffers are reached through copies (buffer_map gives NULL)
}

}  // namespace polyinfer::vk
