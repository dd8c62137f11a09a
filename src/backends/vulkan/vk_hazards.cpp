#include "backends/vulkan/vk_hazards.hpp"

#include <algorithm>

namespace polyinfer::vk {
namespace {

bool overlaps(const ByteRange& a, const ByteRange& b) {
  return a.buffer == b.buffer && a.lo < b.hi && b.lo < a.hi;
}
bool overlaps_any(const ByteRange& r, std::span<const ByteRange> set) {
  return std::any_of(set.begin(), set.end(), [&](const ByteRange& s) { return overlaps(r, s); });
}

}  // namespace

bool hazard(std::span<const ByteRange> reads_a, std::span<const ByteRange> writes_a,
            std::span<const ByteRange> reads_b, std::span<const ByteRange> writes_b) {
  for (const ByteRange& w : writes_a)
    if (overlaps_any(w, writes_b) || overlaps_any(w, reads_b)) return true;
  for (const ByteRange& r : reads_a)
    if (overlaps_any(r, writes_b)) return true;
  return false;
}

bool HazardTracker::add(std::span<const ByteRange> reads, std::span<const ByteRange> writes) {
  const bool wait = hazard(reads, writes, read_, written_);
  if (wait) {
    read_.clear();
    written_.clear();
  }
  read_.insert(read_.end(), reads.begin(), reads.end());
  written_.insert(written_.end(), writes.begin(), writes.end());
  return wait;
}

}  // namespace polyinfer::vk
