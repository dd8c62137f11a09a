// Graphs whose intermediates lie in one arena of equal slots, as the fold
// tests build them (test_norm_fold.cpp, test_swiglu_fold.cpp): submitted over
// a poisoned arena and compared slot by slot.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend_under_test.hpp"

namespace polyinfer::conformance {

// Submits g on dev over `arena` filled with 0xFF bytes (NaN floats) and reads
// back its first `floats` floats; empty when dev does not support a node of g.
std::vector<float> submit_over_poison(const BackendDevice& dev, DeviceBuffer& arena,
                                      const std::vector<pi_node>& g, int64_t floats);

// A fold test's graph run four ways: on the backend under test, there again
// (what a fused kernel leaves behind, such as counts per 32 rows, must not
// change the next run), with `fusion=0`, and on the CPU backend. All empty
// when the backend does not support a node (the first run came back empty).
struct FoldRuns {
  std::vector<float> fused, again, unfused, cpu;
};
FoldRuns fold_runs(BackendUnderTest& backend,
                   const std::function<std::vector<float>(const BackendDevice&)>& run);

// A slot to compare: its node's name, its values, the tolerance relative to
// the largest magnitude of the wanted values.
struct SlotCheck {
  const char* name;
  int64_t values;
  double rel;
};

// got within rel · max|want| of want in every slot (slot s at s · stride
// floats; NaN fails); `vs` names the comparison in the failures.
void compare_slots(const std::vector<float>& got, const std::vector<float>& want,
                   const std::vector<SlotCheck>& slots, int64_t stride, const std::string& vs);

}  // namespace polyinfer::conformance
