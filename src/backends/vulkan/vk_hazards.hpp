// Which dispatches of a graph need a barrier before them: a dispatch waits
// for the dispatches since the last barrier only when it reads bytes they
// wrote, or writes bytes they read or wrote. Independent dispatches (the Q, K
// and V products after one norm) then run back to back without a barrier
// between them.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <span>
#include <vector>

namespace polyinfer::vk {

// Bytes [lo, hi) of a VkBuffer; VK_NULL_HANDLE stands for the recording's
// scratch buffer (vk_graph_plan.hpp), whose handle the plan does not know.
struct ByteRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t lo = 0, hi = 0;
};

// Whether two dispatches must be ordered: one writes bytes that the other
// reads or writes (read after write, write after write, write after read).
bool hazard(std::span<const ByteRange> reads_a, std::span<const ByteRange> writes_a,
            std::span<const ByteRange> reads_b, std::span<const ByteRange> writes_b);

class HazardTracker {
 public:
  // Whether a dispatch reading `reads` and writing `writes` must wait for
  // the dispatches added since the last barrier; if so, a barrier goes before
  // it and those are forgotten. Then the dispatch itself is added.
  bool add(std::span<const ByteRange> reads, std::span<const ByteRange> writes);

 private:
  std::vector<ByteRange> read_, written_;
};

}  // namespace polyinfer::vk
