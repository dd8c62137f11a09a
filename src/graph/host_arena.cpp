#include "graph/host_arena.hpp"

#include <utility>

namespace polyinfer {

HostArena& HostArena::operator=(HostArena&& o) noexcept {
  if (this != &o) {
    cpu_ = DeviceBuffer();
    pin_ = DeviceBuffer();
    memory_ = std::move(o.memory_);
    pin_ = std::move(o.pin_);
    cpu_ = std::move(o.cpu_);
  }
  return *this;
}

HostArena HostArena::allocate(const BackendDevice& cpu,
                              std::span<const BackendDevice* const> accelerators, uint64_t size) {
  constexpr uint64_t kPage = 4096;
  HostArena a;
  const uint64_t bytes = (size + kPage - 1) / kPage * kPage;
  a.memory_.reset(std::aligned_alloc(kPage, bytes == 0 ? kPage : bytes));
  if (!a.memory_) return HostArena();
  for (const BackendDevice* dev : accelerators) {
    a.pin_ = DeviceBuffer::wrap_host(*dev, a.memory_.get(), bytes);
    if (a.pinned()) break;
  }
  a.cpu_ = DeviceBuffer::wrap_host(cpu, a.memory_.get(), size);
  if (a.cpu_.handle() == nullptr) return HostArena();
  return a;
}

}  // namespace polyinfer
