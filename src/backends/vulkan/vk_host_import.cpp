#include "backends/vulkan/vk_host_import.hpp"

#include "backends/vulkan/vk_check.hpp"
#include "backends/vulkan/vk_instance.hpp"

namespace polyinfer::vk {

HostImportCaps host_import_caps(VkPhysicalDevice pd) {
  HostImportCaps c;
  if (!has_device_extension(pd, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) return c;
  VkPhysicalDeviceExternalMemoryHostPropertiesEXT host{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &host;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  c.alignment = host.minImportedHostPointerAlignment;
  c.usable = c.alignment > 0;
  return c;
}

namespace {

constexpr auto kHandle = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;

// The memory types the driver lets `ptr` be imported into.
uint32_t pointer_types(VkDevice dev, void* ptr) {
  const auto get = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
      vkGetDeviceProcAddr(dev, "vkGetMemoryHostPointerPropertiesEXT"));
  if (get == nullptr) throw VkError(PI_ERR_UNSUPPORTED, "no vkGetMemoryHostPointerPropertiesEXT");
  VkMemoryHostPointerPropertiesEXT props{VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
  if (get(dev, kHandle, ptr, &props) != VK_SUCCESS)
    throw VkError(PI_ERR_UNSUPPORTED, "the driver cannot import this host pointer");
  return props.memoryTypeBits;
}

constexpr VkBufferUsageFlags kUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;

// Whether buffers of kUsage may be bound to imported host memory.
bool importable(VkPhysicalDevice pd) {
  VkPhysicalDeviceExternalBufferInfo bi{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO};
  bi.usage = kUsage;
  bi.handleType = kHandle;
  VkExternalBufferProperties props{VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
  vkGetPhysicalDeviceExternalBufferProperties(pd, &bi, &props);
  return (props.externalMemoryProperties.externalMemoryFeatures &
          VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) != 0;
}

// Of `types`, a host-coherent one (host-cached where offered); throws
// PI_ERR_UNSUPPORTED where there is none.
uint32_t coherent_type(const Allocator& alloc, uint32_t types) {
  try {
    return alloc.preferred_type(
        types, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  } catch (const VkError&) {
    throw VkError(PI_ERR_UNSUPPORTED, "no host-coherent memory type for imported host memory");
  }
}

}  // namespace

std::unique_ptr<Block> import_host(const Allocator& alloc, VkPhysicalDevice pd, VkDevice dev,
                                   const HostImportCaps& caps, void* ptr, uint64_t size) {
  if (!caps.usable || !importable(pd))
    throw VkError(PI_ERR_UNSUPPORTED, "the device cannot import host memory");
  if (reinterpret_cast<uintptr_t>(ptr) % caps.alignment != 0 || size % caps.alignment != 0 ||
      size == 0) {
    throw VkError(PI_ERR_UNSUPPORTED, "host memory to import must be " +
                                          std::to_string(caps.alignment) +
                                          "-byte aligned in address and size");
  }
  auto b = std::make_unique<Block>();
  b->size = size;
  b->dedicated = true;
  VkExternalMemoryBufferCreateInfo ext{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO};
  ext.handleTypes = kHandle;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.pNext = &ext;
  bi.size = size;
  bi.usage = kUsage;
  check(vkCreateBuffer(dev, &bi, nullptr, &b->buffer), "vkCreateBuffer (imported)");
  try {
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, b->buffer, &req);
    if (req.size > size) throw VkError(PI_ERR_UNSUPPORTED, "the buffer needs more than the memory");
    const uint32_t type = coherent_type(alloc, req.memoryTypeBits & pointer_types(dev, ptr));
    VkImportMemoryHostPointerInfoEXT imp{VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT};
    imp.handleType = kHandle;
    imp.pHostPointer = ptr;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.pNext = &imp;
    ai.allocationSize = size;
    ai.memoryTypeIndex = type;
    check(vkAllocateMemory(dev, &ai, nullptr, &b->memory), "vkAllocateMemory (imported)");
    check(vkBindBufferMemory(dev, b->buffer, b->memory, 0), "vkBindBufferMemory (imported)");
  } catch (...) {
    release_import(dev, *b);
    throw;
  }
  return b;
}

void release_import(VkDevice dev, Block& b) {
  vkDestroyBuffer(dev, b.buffer, nullptr);
  if (b.memory) vkFreeMemory(dev, b.memory, nullptr);
  b = Block{};
}

void HostImports::add(const void* ptr, uint64_t size, VkBuffer buffer) {
  ranges_[reinterpret_cast<uintptr_t>(ptr)] = {size, buffer};
}

void HostImports::remove(const void* ptr) {
  ranges_.erase(reinterpret_cast<uintptr_t>(ptr));
}

HostImports::Hit HostImports::find(const void* p, uint64_t n) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = ranges_.upper_bound(a);
  if (it == ranges_.begin()) return {VK_NULL_HANDLE, 0};
  --it;
  const uint64_t off = a - it->first;
  if (off > it->second.size || n > it->second.size - off) return {VK_NULL_HANDLE, 0};
  return {it->second.buffer, off};
}

}  // namespace polyinfer::vk
