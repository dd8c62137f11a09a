#include "backends/vulkan/vk_memory.hpp"

#include <algorithm>

#include "backends/vulkan/vk_check.hpp"

namespace polyinfer::vk {
namespace {
constexpr uint64_t kBlockSize = 256ull << 20;
// Sub-allocations start at this alignment: above every device's
// minStorageBufferOffsetAlignment we know of, and a whole number of words.
constexpr uint64_t kAlign = 256;
uint64_t round_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}
}  // namespace

Allocator::Allocator(VkPhysicalDevice pd, VkDevice dev, std::function<void()> before_release)
    : dev_(dev), before_release_(std::move(before_release)) {
  vkGetPhysicalDeviceMemoryProperties(pd, &props_);
  VkPhysicalDeviceMaintenance3Properties m3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &m3;
  vkGetPhysicalDeviceProperties2(pd, &p2);
  block_size_ = std::min<uint64_t>(kBlockSize, m3.maxMemoryAllocationSize);
}

Allocator::~Allocator() {
  for (auto& b : blocks_) destroy_block(b.get());
}

uint32_t Allocator::find_type(uint32_t bits, VkMemoryPropertyFlags want,
                              VkMemoryPropertyFlags avoid) const {
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < props_.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags f = props_.memoryTypes[i].propertyFlags;
      if (!(bits & (1u << i)) || (f & want) != want) continue;
      if (pass == 0 && (f & avoid)) continue;
      return i;
    }
  }
  throw VkError(PI_ERR_DEVICE, "no Vulkan memory type with the needed properties");
}

int Allocator::type_index(uint32_t bits, VkMemoryPropertyFlags want,
                          VkMemoryPropertyFlags prefer) const {
  for (const VkMemoryPropertyFlags need : {want | prefer, want}) {
    for (uint32_t i = 0; i < props_.memoryTypeCount; ++i) {
      if ((bits & (1u << i)) && (props_.memoryTypes[i].propertyFlags & need) == need)
        return static_cast<int>(i);
    }
  }
  return -1;
}

uint32_t Allocator::preferred_type(uint32_t bits, VkMemoryPropertyFlags want,
                                   VkMemoryPropertyFlags prefer) const {
  const int i = type_index(bits, want, prefer);
  if (i < 0) throw VkError(PI_ERR_DEVICE, "no Vulkan memory type with the needed properties");
  return static_cast<uint32_t>(i);
}

std::unique_ptr<Block> Allocator::create_block(uint64_t size, bool dedicated) {
  auto b = std::make_unique<Block>();
  b->size = size;
  b->dedicated = dedicated;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
             VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  check(vkCreateBuffer(dev_, &bi, nullptr, &b->buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev_, b->buffer, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = find_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  const VkResult r = vkAllocateMemory(dev_, &ai, nullptr, &b->memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(dev_, b->buffer, nullptr);
    check(r, "vkAllocateMemory (device-local)");
  }
  check(vkBindBufferMemory(dev_, b->buffer, b->memory, 0), "vkBindBufferMemory");
  b->free[0] = size;
  return b;
}

void Allocator::destroy_block(Block* b) {
  vkDestroyBuffer(dev_, b->buffer, nullptr);
  vkFreeMemory(dev_, b->memory, nullptr);
}

Allocation Allocator::allocate(uint64_t size) {
  const uint64_t need = round_up(std::max<uint64_t>(size, 1), kAlign);
  if (need > block_size_ / 2) {
    blocks_.push_back(create_block(need, true));
    blocks_.back()->free.clear();
    return {blocks_.back().get(), 0, need};
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (auto& b : blocks_) {
      if (b->dedicated) continue;
      for (auto it = b->free.begin(); it != b->free.end(); ++it) {
        if (it->second < need) continue;
        const uint64_t off = it->first, rest = it->second - need;
        b->free.erase(it);
        if (rest > 0) b->free[off + need] = rest;
        return {b.get(), off, need};
      }
    }
    blocks_.push_back(create_block(block_size_, false));
  }
  throw VkError(PI_ERR_OUT_OF_MEMORY, "sub-allocation failed in a fresh block");
}

void Allocator::release(const Allocation& a) {
  Block* b = a.block;
  if (b->dedicated) {
    before_release_();
    destroy_block(b);
    std::erase_if(blocks_, [b](const auto& p) { return p.get() == b; });
    return;
  }
  // Insert and merge with the neighbours on both sides.
  uint64_t off = a.offset, size = a.size;
  auto next = b->free.lower_bound(off);
  if (next != b->free.end() && next->first == off + size) {
    size += next->second;
    next = b->free.erase(next);
  }
  if (next != b->free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      off = prev->first;
      size += prev->second;
      b->free.erase(prev);
    }
  }
  b->free[off] = size;
}

VkResult Allocator::map_buffer(HostBuffer& h, VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
                               VkMemoryPropertyFlags prefer) {
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = h.size;
  bi.usage = usage;
  check(vkCreateBuffer(dev_, &bi, nullptr, &h.buffer), "vkCreateBuffer (host)");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev_, h.buffer, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  const int type = type_index(req.memoryTypeBits, want, prefer);
  ai.memoryTypeIndex = static_cast<uint32_t>(type);
  const VkResult r =
      type < 0 ? VK_ERROR_FEATURE_NOT_PRESENT : vkAllocateMemory(dev_, &ai, nullptr, &h.memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(dev_, h.buffer, nullptr);
    h.buffer = VK_NULL_HANDLE;
    return r;
  }
  check(vkBindBufferMemory(dev_, h.buffer, h.memory, 0), "vkBindBufferMemory (host)");
  check(vkMapMemory(dev_, h.memory, 0, VK_WHOLE_SIZE, 0, &h.mapped), "vkMapMemory");
  return VK_SUCCESS;
}

Allocator::HostBuffer Allocator::create_host_buffer(uint64_t size, VkBufferUsageFlags usage,
                                                    bool cached) {
  HostBuffer h;
  h.size = size;
  h.cached = cached;
  // Coherent spares explicit flushes.
  check(map_buffer(h, usage,
                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                   cached ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0),
        "vkAllocateMemory (host-visible)");
  return h;
}

Allocator::HostBuffer Allocator::create_device_host_buffer(uint64_t size,
                                                           VkBufferUsageFlags usage) {
  HostBuffer h;
  h.size = size;
  const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                     VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  return map_buffer(h, usage, want, 0) == VK_SUCCESS ? h : HostBuffer{};
}

void Allocator::destroy_host_buffer(HostBuffer& b) {
  if (b.buffer == VK_NULL_HANDLE) return;
  vkUnmapMemory(dev_, b.memory);
  vkDestroyBuffer(dev_, b.buffer, nullptr);
  vkFreeMemory(dev_, b.memory, nullptr);
  b = HostBuffer{};
}

}  // namespace polyinfer::vk
