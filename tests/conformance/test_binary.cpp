// ADD and MUL: src0 F32 [...] op src1 F32 broadcast (each dim of src1 divides
// src0's; element i of src0 meets element i mod ne1 of src1 in every dim).
#include <cmath>
#include <ostream>
#include <string>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

struct BinaryCase {
  std::string name;
  pi_op op;
  Shape a, b;
};

// gtest names a failing case by this instead of its bytes.
void PrintTo(const BinaryCase& c, std::ostream* os) {
  *os << c.name;
}

class Binary : public ConformanceTestWithParam<BinaryCase> {};

TEST_P(Binary, MatchesReference) {
  const BinaryCase& c = GetParam();
  Rng rng(case_seed("BINARY/" + c.name));
  HostTensor a = contiguous(GgmlType::F32, c.a);
  HostTensor b = contiguous(GgmlType::F32, c.b);
  fill_normal(a, rng);
  fill_normal(b, rng);
  HostTensor dst = contiguous(GgmlType::F32, c.a);
  pi_node node{};
  node.op = c.op;
  const NodeRun r = backend().run(node, {&a, &b}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  std::vector<double> want, bound;
  for (int64_t i3 = 0; i3 < c.a[3]; ++i3) {
    for (int64_t i2 = 0; i2 < c.a[2]; ++i2) {
      for (int64_t i1 = 0; i1 < c.a[1]; ++i1) {
        for (int64_t i0 = 0; i0 < c.a[0]; ++i0) {
          const double x = a.f32(i0, i1, i2, i3);
          const double y = b.f32(i0 % c.b[0], i1 % c.b[1], i2 % c.b[2], i3 % c.b[3]);
          const double v = c.op == PI_OP_ADD ? x + y : x * y;
          want.push_back(v);
          bound.push_back(elementwise_bound(v));
        }
      }
    }
  }
  expect_output(dst, want, bound, c.name);
}

const BinaryCase kCases[] = {
    {"add_same_shape", PI_OP_ADD, {67, 5, 3, 1}, {67, 5, 3, 1}},
    {"add_row", PI_OP_ADD, {67, 5, 3, 1}, {67, 1, 1, 1}},
    {"add_dims_1_3", PI_OP_ADD, {64, 4, 3, 2}, {64, 1, 3, 1}},
    {"add_dim0", PI_OP_ADD, {48, 5, 1, 1}, {16, 5, 1, 1}},
    {"mul_same_shape", PI_OP_MUL, {67, 5, 3, 1}, {67, 5, 3, 1}},
    {"mul_row", PI_OP_MUL, {2048, 7, 1, 1}, {2048, 1, 1, 1}},  // norm weight x activations
    {"mul_dims_1_3", PI_OP_MUL, {64, 4, 3, 2}, {64, 4, 1, 2}},
    {"mul_dim0", PI_OP_MUL, {48, 5, 1, 1}, {1, 5, 1, 1}},
    // Prompt-sized: 64 rows or more take the CUDA backend's four-wide kernel
    // (16-byte rows, same shapes) or its looping one (a row of 67 values).
    {"add_prompt", PI_OP_ADD, {256, 70, 1, 1}, {256, 70, 1, 1}},
    {"add_prompt_ragged", PI_OP_ADD, {67, 70, 1, 1}, {67, 70, 1, 1}},
    {"mul_prompt_row", PI_OP_MUL, {256, 70, 1, 1}, {256, 1, 1, 1}},
};

INSTANTIATE_TEST_SUITE_P(Shapes, Binary, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace polyinfer::conformance
