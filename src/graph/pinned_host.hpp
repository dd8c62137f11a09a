// Page-aligned host memory page-locked by the first of some devices that
// wraps host memory (buffer_wrap_host), so that copies between it and that
// device run by DMA instead of through the driver's staging of pageable
// memory. A device that cannot wrap leaves it plain host memory.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <utility>

#include "backend/device.hpp"

namespace polyinfer {

class PinnedHost {
 public:
  PinnedHost() = default;
  PinnedHost(PinnedHost&& o) noexcept { *this = std::move(o); }
  // Releases the wrapper before the memory under it (a member-wise move would
  // free the memory first, while it is still page-locked).
  PinnedHost& operator=(PinnedHost&& o) noexcept;
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  ~PinnedHost() = default;  // members in reverse: pin_, then memory_

  // `size` bytes (rounded up to whole 4 KiB pages), page-locked by the first of
  // `devices` that wraps host memory. Empty (data() == nullptr) when the host
  // has no memory for it.
  static PinnedHost allocate(std::span<const BackendDevice* const> devices, uint64_t size);

  void* data() const { return memory_.get(); }
  uint64_t size() const { return size_; }
  // Whether a device has page-locked it.
  bool pinned() const { return pin_.handle() != nullptr; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  // Declared first, destroyed last: the wrapper below is released before it.
  std::unique_ptr<void, Free> memory_;
  uint64_t size_ = 0;
  DeviceBuffer pin_;
};

}  // namespace polyinfer
