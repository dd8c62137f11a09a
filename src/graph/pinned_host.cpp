#include "graph/pinned_host.hpp"

#include <utility>

namespace polyinfer {

PinnedHost& PinnedHost::operator=(PinnedHost&& o) noexcept {
  if (this != &o) {
    pin_ = DeviceBuffer();
    memory_ = std::move(o.memory_);
    size_ = std::exchange(o.size_, 0);
    pin_ = std::move(o.pin_);
  }
  return *this;
}

PinnedHost PinnedHost::allocate(std::span<const BackendDevice* const> devices, uint64_t size) {
  constexpr uint64_t kPage = 4096;
  PinnedHost p;
  const uint64_t bytes = size == 0 ? kPage : (size + kPage - 1) / kPage * kPage;
  p.memory_.reset(std::aligned_alloc(kPage, bytes));
  if (!p.memory_) return PinnedHost();
  p.size_ = bytes;
  for (const BackendDevice* dev : devices) {
    p.pin_ = DeviceBuffer::wrap_host(*dev, p.memory_.get(), bytes);
    if (p.pinned()) break;
  }
  return p;
}

}  // namespace polyinfer
