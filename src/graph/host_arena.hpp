// A CPU device's arena in host memory that an accelerator has page-locked
// (pinned_host.hpp), so that the copies from it to that accelerator (a
// prompt's embeddings, going to the first GPU layer) run by DMA instead of
// through the driver's staging of pageable memory: as llama.cpp allocates its
// CPU compute buffers from a GPU backend's host buffer type.
#pragma once

#include <cstdint>
#include <span>

#include "backend/device.hpp"
#include "graph/pinned_host.hpp"

namespace polyinfer {

class HostArena {
 public:
  HostArena() = default;
  HostArena(HostArena&&) noexcept = default;
  // Releases the CPU device's wrapper before the memory under it (a
  // member-wise move would free the memory first, while it is still wrapped).
  HostArena& operator=(HostArena&& o) noexcept;
  HostArena(const HostArena&) = delete;
  HostArena& operator=(const HostArena&) = delete;
  ~HostArena() = default;  // members in reverse: cpu_, then memory_
  // `size` bytes of page-aligned host memory wrapped for `cpu`, page-locked by
  // the first of `accelerators` that wraps host memory (none may: the arena is
  // then plain host memory). Empty (buffer().handle() == nullptr) when `cpu`
  // does not wrap host memory.
  static HostArena allocate(const BackendDevice& cpu,
                            std::span<const BackendDevice* const> accelerators, uint64_t size);

  // The CPU device's buffer over the memory.
  const DeviceBuffer& buffer() const { return cpu_; }
  // Whether an accelerator has page-locked it.
  bool pinned() const { return memory_.pinned(); }

 private:
  // Declared first, destroyed last: the CPU device's wrapper is released before it.
  PinnedHost memory_;
  DeviceBuffer cpu_;
};

}  // namespace polyinfer
