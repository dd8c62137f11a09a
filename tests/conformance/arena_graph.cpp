#include "arena_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace polyinfer::conformance {

std::vector<float> submit_over_poison(const BackendDevice& dev, DeviceBuffer& arena,
                                      const std::vector<pi_node>& g, int64_t floats) {
  for (const pi_node& n : g) {
    if (!dev.supports(n)) return {};
  }
  const std::vector<uint8_t> poison(static_cast<size_t>(floats) * 4, 0xFF);
  arena.write(0, poison.data(), poison.size());
  dev.submit(pi_graph{g.data(), static_cast<uint32_t>(g.size())});
  std::vector<float> out(static_cast<size_t>(floats));
  arena.read(0, out.data(), out.size() * 4);
  return out;
}

FoldRuns fold_runs(BackendUnderTest& backend,
                   const std::function<std::vector<float>(const BackendDevice&)>& run) {
  FoldRuns r;
  const BackendDevice& dev = backend.device();
  r.fused = run(dev);
  if (r.fused.empty()) return r;
  r.again = run(dev);
  r.unfused = run(BackendDevice(dev.vt(), 0, backend.options() + ",fusion=0"));
  r.cpu = run(BackendDevice(*find_backend("cpu", nullptr), 0, "threads=4"));
  return r;
}

void compare_slots(const std::vector<float>& got, const std::vector<float>& want,
                   const std::vector<SlotCheck>& slots, int64_t stride, const std::string& vs) {
  for (size_t s = 0; s < slots.size(); ++s) {
    const SlotCheck& c = slots[s];
    const float* g = got.data() + static_cast<int64_t>(s) * stride;
    const float* w = want.data() + static_cast<int64_t>(s) * stride;
    double peak = 0.0;
    for (int64_t i = 0; i < c.values; ++i) peak = std::max(peak, std::fabs(double{w[i]}));
    const double tol = c.rel * peak;
    int64_t bad = 0;
    for (int64_t i = 0; i < c.values; ++i) {
      if (!(std::fabs(double{g[i]} - w[i]) <= tol) && bad++ < 3)
        ADD_FAILURE() << vs << ": " << c.name << "[" << i << "] " << g[i] << ", want " << w[i];
    }
    EXPECT_EQ(bad, 0) << vs << ": " << c.name;
  }
}

}  // namespace polyinfer::conformance
