// ARGMAX: F32 [n, rows] -> I32 [rows], the first index of the maximum of each
// row. Rows with planted ties (the maximum twice, and a constant row), a row of
// negatives only, and a maximum in the last element.
#include <string>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"

namespace polyinfer::conformance {
namespace {

class Argmax : public ConformanceTest {};

TEST_F(Argmax, FirstIndexOfTheMaximum) {
  Rng rng(case_seed("ARGMAX/ties"));
  const int64_t n = 1001, rows = 6;
  HostTensor x = contiguous(GgmlType::F32, {n, rows, 1, 1});
  fill_normal(x, rng);
  x.f32(700, 0) = x.f32(300, 0) = 9.0f;                 // tie: 300 wins
  for (int64_t i = 0; i < n; ++i) x.f32(i, 1) = 0.25f;  // all equal: 0 wins
  for (int64_t i = 0; i < n; ++i) x.f32(i, 2) = -1.0f - static_cast<float>(i % 17);
  x.f32(n - 1, 3) = 12.0f;
  x.f32(5, 4) = x.f32(6, 4) = x.f32(n - 1, 4) = 7.0f;
  HostTensor dst = contiguous(GgmlType::I32, {rows, 1, 1, 1});
  pi_node node{};
  node.op = PI_OP_ARGMAX;
  const NodeRun r = backend().run(node, {&x}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  for (int64_t row = 0; row < rows; ++row) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
      if (x.f32(i, row) > x.f32(best, row)) best = i;
    }
    EXPECT_EQ(dst.i32(row), best) << "row " << row;
  }
  EXPECT_EQ(count_written_outside_view(dst), 0);
}

}  // namespace
}  // namespace polyinfer::conformance
