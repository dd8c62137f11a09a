// Which nodes of a graph need a barrier before them: a node waits for the
// nodes since the last barrier only when it reads bytes they wrote, or writes
// bytes they read or wrote. Independent nodes (the Q, K and V products after
// one norm) then run back to back without a barrier between them.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <span>
#include <vector>

namespace polyinfer::vk {

// Bytes [lo, hi) of a VkBuffer.
struct ByteRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t lo = 0, hi = 0;
};

class HazardTracker {
 public:
  // Whether a node reading `reads` and writing `write` must wait for the
  // nodes added since the last barrier; if so, a barrier goes before it and
  // those nodes are forgotten. Then the node itself is added.
  bool add_node(std::span<const ByteRange> reads, const ByteRange& write);

 private:
  std::vector<ByteRange> read_, written_;
};

}  // namespace polyinfer::vk
