// test_conformance_cpu_targets: the conformance matrix on the CPU backend once
// per Highway target that this build generated and this machine runs (AVX3,
// AVX2, SSE4, SSSE3, EMU128 on x86), not only the best one that run-time
// dispatch picks, so every SIMD path of the CPU kernels meets the float64
// references. Exit status 1 when any target fails.
#include <gtest/gtest.h>

#include <cstdio>

#include "hwy/targets.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int status = 0;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    std::printf("[ Highway target %s ]\n", hwy::TargetName(target));
    status |= RUN_ALL_TESTS();
  }
  hwy::SetSupportedTargetsForTest(0);
  return status;
}
