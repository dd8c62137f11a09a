#include "backends/vulkan/vk_hazards.hpp"

#include <algorithm>

namespace polyinfer::vk {
namespace {

bool overlaps(const ByteRange& a, const ByteRange& b) {
  return a.buffer == b.buffer && a.lo < b.hi && b.lo < a.hi;
}
bool overlaps_any(const ByteRange& r, const std::vector<ByteRange>& set) {
  return std::any_of(set.begin(), set.end(), [&](const ByteRange& s) { return overlaps(r, s); });
}

}  // namespace

bool HazardTracker::add(std::span<const ByteRange> reads, std::span<const ByteRange> writes) {
  // Read after write, write after write, write after read.
  bool wait = false;
  for (const ByteRange& w : writes)
    wait = wait || overlaps_any(w, written_) || overlaps_any(w, read_);
  for (const ByteRange& r : reads) wait = wait || overlaps_any(r, written_);
  if (wait) {
    read_.clear();
    written_.clear();
  }
  read_.insert(read_.end(), reads.begin(), reads.end());
  written_.insert(written_.end(), writes.begin(), writes.end());
  return wait;
}

}  // namespace polyinfer::vk
