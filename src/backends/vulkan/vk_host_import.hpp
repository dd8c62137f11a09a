// Host memory the caller owns, imported as a VkBuffer (VK_EXT_external_memory_host)
// for buffer_wrap_host: copies between it and device memory then run by DMA,
// with no staging copy on the host (a decode step's logits: llama-8b's 513 KB
// had been read out of staging memory at about 8.5 GB/s, some 60 us a token
// on the H200 host, session 28).
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>

#include "backends/vulkan/vk_memory.hpp"

namespace polyinfer::vk {

// What the device offers for imports: usable when it has the extension;
// pointers and sizes must be multiples of `alignment`
// (minImportedHostPointerAlignment, 4 KiB on NVIDIA and lavapipe).
struct HostImportCaps {
  bool usable = false;
  uint64_t alignment = 0;
};
HostImportCaps host_import_caps(VkPhysicalDevice pd);

// [ptr, ptr + size) imported as one buffer (a Block of its own, so that
// bindings and copies treat it as any other), in a host-coherent memory type
// (host-cached where offered: the host reads what the GPU wrote without
// flushes, which memory it never maps could not have), or
// VkError(PI_ERR_UNSUPPORTED) when the device cannot: no extension, buffers
// of this usage not importable, misaligned, or the driver refuses.
std::unique_ptr<Block> import_host(const Allocator& alloc, VkPhysicalDevice pd, VkDevice dev,
                                   const HostImportCaps& caps, void* ptr, uint64_t size);
void release_import(VkDevice dev, Block& b);

// The imported ranges of a device, by host address.
class HostImports {
 public:
  struct Hit {
    VkBuffer buffer;
    uint64_t offset;  // of the looked-up address within the buffer
  };
  void add(const void* ptr, uint64_t size, VkBuffer buffer);
  void remove(const void* ptr);
  // The buffer holding all of [p, p + n), or a null buffer.
  Hit find(const void* p, uint64_t n) const;

 private:
  struct Range {
    uint64_t size;
    VkBuffer buffer;
  };
  std::map<uintptr_t, Range> ranges_;
};

}  // namespace polyinfer::vk
