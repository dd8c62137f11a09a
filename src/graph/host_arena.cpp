#include "graph/host_arena.hpp"

#include <utility>

namespace polyinfer {

HostArena& HostArena::operator=(HostArena&& o) noexcept {
  if (this != &o) {
    cpu_ = DeviceBuffer();
    memory_ = std::move(o.memory_);
    cpu_ = std::move(o.cpu_);
  }
  return *this;
}

HostArena HostArena::allocate(const BackendDevice& cpu,
                              std::span<const BackendDevice* const> accelerators, uint64_t size) {
  HostArena a;
  a.memory_ = PinnedHost::allocate(accelerators, size);
  if (a.memory_.data() == nullptr) return HostArena();
  a.cpu_ = DeviceBuffer::wrap_host(cpu, a.memory_.data(), size);
  if (a.cpu_.handle() == nullptr) return HostArena();
  return a;
}

}  // namespace polyinfer
