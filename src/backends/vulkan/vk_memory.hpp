// Device memory: large device-local blocks, each with one VkBuffer over all of
// it, sub-allocated first-fit; a request too big for a block gets a block of
// its own. Every pi_buffer is (block, offset, size), so descriptors bind the
// block's VkBuffer and shaders add the offset.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace polyinfer::vk {

struct Block {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t size = 0;
  bool dedicated = false;
  std::map<uint64_t, uint64_t> free;  // offset -> size of the free ranges
};

struct Allocation {
  Block* block = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
};

class Allocator {
 public:
  // before_release runs before a block's VkBuffer is destroyed (the device
  // waits for idle and drops recorded command buffers that name it).
  Allocator(VkPhysicalDevice pd, VkDevice dev, std::function<void()> before_release);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  Allocation allocate(uint64_t size);  // throws VkError
  void release(const Allocation& a);

  // Host-visible, coherent memory for staging and node parameters.
  struct HostBuffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;
    uint64_t size = 0;
    bool cached = false;  // as asked of create_host_buffer
  };
  // Host-visible, coherent memory, mapped. `cached`: in host-cached memory
  // where the device has it (staging the host reads back: uncached memory
  // is write-combined on discrete GPUs, and the CPU reads it a few GB/s at best).
  HostBuffer create_host_buffer(uint64_t size, VkBufferUsageFlags usage, bool cached);
  // Device-local memory the host maps (a discrete GPU's BAR window; all of a
  // CPU device's memory), coherent; an empty HostBuffer (buffer
  // VK_NULL_HANDLE) where the device has no such type or no room left in it.
  HostBuffer create_device_host_buffer(uint64_t size, VkBufferUsageFlags usage);
  void destroy_host_buffer(HostBuffer& b);
  // Of the memory types in `bits`, the first with `want` and `prefer`, else the
  // first with `want`; VkError(PI_ERR_DEVICE) when none has `want`.
  uint32_t preferred_type(uint32_t bits, VkMemoryPropertyFlags want,
                          VkMemoryPropertyFlags prefer) const;

 private:
  // Of the memory types in `bits`, the first with `want` and `prefer`, else
  // the first with `want`; -1 when none has `want`.
  int type_index(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) const;
  // h.size bytes of `usage`, mapped, in the memory type_index picks for the
  // buffer; on failure (returned) h holds nothing.
  VkResult map_buffer(HostBuffer& h, VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
                      VkMemoryPropertyFlags prefer);
  std::unique_ptr<Block> create_block(uint64_t size, bool dedicated);
  void destroy_block(Block* b);
  uint32_t find_type(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const;

  VkDevice dev_;
  VkPhysicalDeviceMemoryProperties props_{};
  uint64_t block_size_;
  std::function<void()> before_release_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

}  // namespace polyinfer::vk
