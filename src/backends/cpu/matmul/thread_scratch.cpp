#include "backends/cpu/matmul/thread_scratch.hpp"

#include <vector>

namespace polyinfer::cpu {

uint8_t* thread_scratch(ScratchSlot slot, size_t bytes) {
  thread_local std::vector<uint8_t> buffers[static_cast<int>(ScratchSlot::kCount)];
  std::vector<uint8_t>& b = buffers[static_cast<int>(slot)];
  if (b.size() < bytes + 64) b.resize(bytes + 64);
  return b.data() + (64 - reinterpret_cast<uintptr_t>(b.data()) % 64) % 64;
}

}  // namespace polyinfer::cpu
