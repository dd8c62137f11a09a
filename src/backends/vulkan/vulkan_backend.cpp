// The Vulkan backend's plugin entry: the pi_backend_vtable over the pieces in
// this folder. Every entry catches VkError (C++ never crosses the ABI) and
// turns validation-layer errors raised during the call into PI_ERR_DEVICE.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/vulkan/vk_check.hpp"
#include "backends/vulkan/vk_coopmat.hpp"
#include "backends/vulkan/vk_device.hpp"
#include "backends/vulkan/vk_instance.hpp"
#include "backends/vulkan/vk_ops.hpp"
#include "backends/vulkan/vk_stream.hpp"

namespace polyinfer::vk {
namespace {

std::string g_open_error;

// Runs f; a thrown VkError or a validation error becomes the status and the message.
template <typename F>
pi_status guarded(std::string& error, F&& f) {
  pi_status st = PI_OK;
  try {
    f();
  } catch (const VkError& e) {
    error = e.what();
    st = e.status;
  } catch (const std::bad_alloc&) {
    error = "out of host memory";
    st = PI_ERR_OUT_OF_MEMORY;
  }
  const std::string v = take_validation_errors();
  if (!v.empty()) {
    error = st == PI_OK ? v : error + "; " + v;
    return PI_ERR_DEVICE;
  }
  return st;
}

int probe(char* reason, size_t reason_len) {
  const Instance& inst = instance();
  if (inst.instance == VK_NULL_HANDLE || inst.devices.empty()) {
    std::snprintf(reason, reason_len, "%s", inst.error.c_str());
    return 0;
  }
  return 1;
}

int device_count() {
  return static_cast<int>(instance().devices.size());
}

pi_status device_info(int index, pi_device_info* out) {
  if (out == nullptr || index < 0 || index >= device_count()) return PI_ERR_INVALID;
  describe_device(instance().devices[index], out);
  return PI_OK;
}

// A queue family that runs compute shaders (transfers come with it).
int compute_family(VkPhysicalDevice pd) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fam(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fam.data());
  for (uint32_t i = 0; i < n; ++i)
    if (fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
  return -1;
}

// The text after "name=" in the options, or nullptr when absent.
const char* option_value(const char* options, const char* name) {
  if (options == nullptr) return nullptr;
  const std::string key = std::string(name) + "=";
  const char* at = std::strstr(options, key.c_str());
  return at == nullptr ? nullptr : at + key.size();
}

// "subgroup=0" turns the subgroup paths off and "intdot=0" the integer dot
// products, so that a device that has them also runs (and tests) the
// fallbacks, "coopmat=0" the cooperative-matrix GEMM (vk_coopmat.hpp);
// "fusion=0" and "prequant=0" the fused dispatches
// (vk_fusion.hpp), "prequant_min_k=N" sets Features::prequant_min_k;
// "poll=0" or "poll=1" whether reads poll their fence (pi_device_s::poll_fences;
// absent: on discrete GPUs), "direct_params=0" copies the recordings'
// parameter words (pi_device_s::direct_params). Other keys are for other backends.
bool option_on(const char* options, const char* name) {
  const char* v = option_value(options, name);
  return v == nullptr || *v != '0';
}

// The value of option `name`=N, or `fallback` when absent or not a number.
uint32_t option_uint(const char* options, const char* name, uint32_t fallback) {
  const char* v = option_value(options, name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  return end == v ? fallback : static_cast<uint32_t>(n);
}

// A device option that the environment variable `env` (starting with '0')
// also turns off, for A/B runs of a model without new options.
bool option_or_env_on(const char* options, const char* name, const char* env) {
  const char* e = std::getenv(env);
  return option_on(options, name) && !(e != nullptr && e[0] == '0');
}

pi_status device_open(int index, const char* options, pi_device* out) {
  if (out == nullptr || index < 0 || index >= device_count()) {
    g_open_error = "no Vulkan device " + std::to_string(index) + " (there are " +
                   std::to_string(device_count()) + ")";
    return PI_ERR_INVALID;
  }
  return guarded(g_open_error, [&] {
    VkPhysicalDevice pd = instance().devices[index];
    const int family = compute_family(pd);
    if (family < 0) throw VkError(PI_ERR_UNSUPPORTED, "the device has no compute queue");
    VkPhysicalDeviceFeatures f{};
    vkGetPhysicalDeviceFeatures(pd, &f);
    // Shaders index the array of storage buffers with a per-call slot number.
    if (!f.shaderStorageBufferArrayDynamicIndexing)
      throw VkError(PI_ERR_UNSUPPORTED, "the device lacks shaderStorageBufferArrayDynamicIndexing");
    VkPhysicalDeviceFeatures enable{};
    enable.shaderStorageBufferArrayDynamicIndexing = VK_TRUE;
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = static_cast<uint32_t>(family);
    qi.queueCount = 1;
    qi.pQueuePriorities = &priority;
    VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    di.pEnabledFeatures = &enable;
    const bool int_dot = option_on(options, "intdot") && has_int_dot(pd);
    const bool coopmat = option_or_env_on(options, "coopmat", "POLYINFER_VULKAN_COOPMAT") &&
                         coopmat_usable(instance().instance, pd, kCoopmatSharedBytes);
    std::vector<const char*> extensions;
    void* chain = nullptr;  // the feature structs, each in front of the last
    VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
    dot.shaderIntegerDotProduct = VK_TRUE;
    if (int_dot) {
      chain = &dot;
      extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    }
    // One struct of a type per chain: the cooperative matrices' enables the
    // memory model too, and takes device scope from here.
    const bool memory_model = has_memory_model(pd);
    VkPhysicalDeviceVulkanMemoryModelFeatures mm{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
    mm.vulkanMemoryModel = mm.vulkanMemoryModelDeviceScope = VK_TRUE;
    if (memory_model && !coopmat) {
      mm.pNext = chain;
      chain = &mm;
    }
    CoopmatEnable cm;
    cm.memory_model.vulkanMemoryModelDeviceScope = memory_model ? VK_TRUE : VK_FALSE;
    if (coopmat) {
      chain = cm.chain(chain);
      extensions.push_back(CoopmatEnable::kExtension);
    }
    const polyinfer::vk::HostImportCaps host_import = polyinfer::vk::host_import_caps(pd);
    if (host_import.usable) extensions.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    di.pNext = chain;
    di.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    di.ppEnabledExtensionNames = extensions.data();
    VkDevice device = VK_NULL_HANDLE;
    check(vkCreateDevice(pd, &di, nullptr, &device), "vkCreateDevice");
    try {
      *out = new pi_device_s(pd, device, static_cast<uint32_t>(family));
      if (!option_on(options, "subgroup")) {
        (*out)->features.subgroup_arith = false;
        (*out)->features.subgroup_lanes8 = false;
      }
      (*out)->features.int_dot = int_dot;
      (*out)->features.memory_model = memory_model;
      (*out)->features.coopmat = coopmat;
      (*out)->host_import = host_import;
      if (option_value(options, "poll") != nullptr)
        (*out)->poll_fences = option_on(options, "poll");
      (*out)->direct_params =
          option_or_env_on(options, "direct_params", "POLYINFER_VULKAN_DIRECT_PARAMS");
      const bool fusion = option_or_env_on(options, "fusion", "POLYINFER_VULKAN_FUSION");
      (*out)->features.fusion = fusion;
      (*out)->features.prequant =
          fusion && int_dot && option_or_env_on(options, "prequant", "POLYINFER_VULKAN_PREQUANT");
      (*out)->features.prequant_min_k =
          option_uint(options, "prequant_min_k", (*out)->features.prequant_min_k);
    } catch (...) {
      vkDestroyDevice(device, nullptr);
      throw;
    }
  });
}

void device_close(pi_device dev) {
  delete dev;
  take_validation_errors();  // nothing can report them any more
}

const char* last_error(pi_device dev) {
  return dev ? dev->error.c_str() : g_open_error.c_str();
}

pi_status buffer_alloc(pi_device dev, uint64_t size, pi_buffer* out) {
  return guarded(dev->error, [&] {
    auto* b = new pi_buffer_s{dev, {}, size};
    try {
      b->alloc = dev->allocator->allocate(size);
    } catch (...) {
      delete b;
      throw;
    }
    *out = b;
  });
}

pi_status buffer_wrap_host(pi_device dev, void* ptr, uint64_t size, pi_buffer* out) {
  if (dev == nullptr || ptr == nullptr || out == nullptr) return PI_ERR_INVALID;
  return guarded(dev->error, [&] {
    std::unique_ptr<Block> block =
        import_host(*dev->allocator, dev->physical, dev->device, dev->host_import, ptr, size);
    try {
      auto b = std::make_unique<pi_buffer_s>(
          pi_buffer_s{dev, {block.get(), 0, size}, size, nullptr, ptr});
      dev->imports.add(ptr, size, block->buffer);
      b->imported = std::move(block);
      *out = b.release();
    } catch (...) {
      release_import(dev->device, *block);
      throw;
    }
  });
}

void buffer_free(pi_buffer buf) {
  if (buf == nullptr) return;
  pi_device dev = buf->dev;
  if (buf->imported) {
    // The host keeps the memory: done with it once the queue is (recordings may bind it).
    dev->drop_recordings();
    dev->imports.remove(buf->host);
    release_import(dev->device, *buf->imported);
  } else {
    guarded(dev->error, [&] { dev->allocator->release(buf->alloc); });
  }
  delete buf;
  ++dev->buffers_freed;
}

void* buffer_map(pi_buffer) {
  return nullptr;
}

bool in_range(pi_buffer buf, uint64_t offset, uint64_t size) {
  return offset <= buf->size && size <= buf->size - offset;
}

pi_status buffer_write(pi_stream s, pi_buffer buf, uint64_t offset, const void* src,
                       uint64_t size) {
  if (s == nullptr || buf == nullptr || (src == nullptr && size != 0)) return PI_ERR_INVALID;
  if (!in_range(buf, offset, size)) {
    s->dev->error = "buffer_write of " + std::to_string(size) + " bytes at " +
                    std::to_string(offset) + " past the buffer's " + std::to_string(buf->size);
    return PI_ERR_INVALID;
  }
  return guarded(s->dev->error, [&] { s->write(buf, offset, src, size); });
}

pi_status buffer_read(pi_stream s, pi_buffer buf, uint64_t offset, void* dst, uint64_t size) {
  if (s == nullptr || buf == nullptr || (dst == nullptr && size != 0)) return PI_ERR_INVALID;
  if (!in_range(buf, offset, size)) {
    s->dev->error = "buffer_read of " + std::to_string(size) + " bytes at " +
                    std::to_string(offset) + " past the buffer's " + std::to_string(buf->size);
    return PI_ERR_INVALID;
  }
  return guarded(s->dev->error, [&] { s->read(buf, offset, dst, size); });
}

pi_status stream_create(pi_device dev, pi_stream* out) {
  return guarded(dev->error, [&] { *out = new pi_stream_s(dev); });
}

void stream_destroy(pi_stream s) {
  if (s == nullptr) return;
  pi_device dev = s->dev;
  guarded(dev->error, [&] { delete s; });
}

pi_status stream_sync(pi_stream s) {
  return guarded(s->dev->error, [&] { s->sync(); });
}

int supports(pi_device dev, const pi_node* node) {
  OpPlan plan;
  std::string why;
  return node != nullptr && plan_node(*node, dev->features, &plan, &why) ? 1 : 0;
}

pi_status graph_submit(pi_stream s, const pi_graph* graph) {
  if (s == nullptr || graph == nullptr || (graph->nodes == nullptr && graph->n_nodes != 0))
    return PI_ERR_INVALID;
  return guarded(s->dev->error, [&] { s->submit_graph(*graph); });
}

pi_status graph_prepare(pi_stream s, const pi_graph* graph) {
  if (s == nullptr) return PI_ERR_INVALID;
  if (graph == nullptr || graph->nodes == nullptr || graph->n_nodes == 0) {
    s->dev->error = "graph_prepare: no graph, or a graph of no nodes";
    return PI_ERR_INVALID;
  }
  return guarded(s->dev->error, [&] { s->prepare_graph(*graph); });
}

pi_status graph_submit_prepared(pi_stream s) {
  if (s == nullptr) return PI_ERR_INVALID;
  bool had = false;
  const pi_status st = guarded(s->dev->error, [&] { had = s->submit_prepared(); });
  if (st != PI_OK) return st;
  if (!had) {
    s->dev->error = "graph_submit_prepared: no graph prepared on this stream";
    return PI_ERR_INVALID;
  }
  return PI_OK;
}

const pi_backend_vtable kVtable{
    PI_ABI_VERSION,        "vulkan",     probe,        device_count, device_info,
    device_open,           device_close, last_error,   buffer_alloc, buffer_wrap_host,
    buffer_free,           buffer_map,   buffer_write, buffer_read,  stream_create,
    stream_destroy,        stream_sync,  supports,     graph_submit, graph_prepare,
    graph_submit_prepared,
};

}  // namespace
}  // namespace polyinfer::vk

extern "C" __attribute__((visibility("default"))) const pi_backend_vtable* polyinfer_backend_entry(
    void) {
  return &polyinfer::vk::kVtable;
}
