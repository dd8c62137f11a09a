#include "registry/known_backends.hpp"

#include <algorithm>
#include <array>

// cmake/Backends.cmake sets this on this file alone, so that flipping a switch rebuilds one
// object: the enabled backends, comma-separated ("cuda,vulkan"), or "".
#ifndef POLYINFER_COMPILED_BACKENDS
#error "POLYINFER_COMPILED_BACKENDS must be defined by the build"
#endif

namespace polyinfer {
namespace {

constexpr std::array<std::string_view, 7> kKnown = {"cuda", "hip",   "vulkan", "opencl",
                                                    "sycl", "metal", "cpu"};

bool listed(std::string_view list, std::string_view name) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    if (list.substr(start, comma - start) == name) return true;
    start = comma + 1;
  }
  return false;
}

}  // namespace

std::span<const std::string_view> known_backend_names() {
  return kKnown;
}

bool is_known_backend(std::string_view name) {
  return std::find(kKnown.begin(), kKnown.end(), name) != kKnown.end();
}

std::vector<std::string> compiled_gpu_backends() {
  std::vector<std::string> out;
  for (std::string_view name : kKnown) {
    if (name != "cpu" && listed(POLYINFER_COMPILED_BACKENDS, name)) out.emplace_back(name);
  }
  return out;
}

}  // namespace polyinfer
