#include "backends/cuda/host_pins.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

namespace polyinfer::cuda {
namespace {

struct Range {
  const uint8_t* first;
  uint64_t size;
};

std::mutex g_mutex;
std::vector<Range> g_ranges;  // a handful: one per CPU arena

}  // namespace

void add_host_pin(const void* ptr, uint64_t size) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_ranges.push_back({static_cast<const uint8_t*>(ptr), size});
}

void remove_host_pin(const void* ptr) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  std::erase_if(g_ranges, [&](const Range& r) { return r.first == ptr; });
}

bool host_pinned(const void* ptr, uint64_t size) {
  const auto* p = static_cast<const uint8_t*>(ptr);
  const std::lock_guard<std::mutex> lock(g_mutex);
  return std::any_of(g_ranges.begin(), g_ranges.end(), [&](const Range& r) {
    return p >= r.first && size <= r.size && p - r.first <= static_cast<int64_t>(r.size - size);
  });
}

}  // namespace polyinfer::cuda
