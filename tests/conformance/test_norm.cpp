// RMS_NORM (Zhang & Sennrich 2019) and NORM over dim 0 of F32 [K, ...].
// Each row gets its own scale 10^[-3, 2], so eps matters in the smallest rows.
#include <cmath>
#include <ostream>
#include <string>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

struct NormCase {
  std::string name;
  Shape ne;
  float eps;
  double mean;  // of the input, for NORM's mean subtraction
};

// x with a random order of magnitude per row.
HostTensor scaled_rows(const NormCase& c, Rng& rng) {
  HostTensor x = contiguous(GgmlType::F32, c.ne);
  fill_normal(x, rng, 1.0, c.mean);
  std::uniform_real_distribution<double> exponent(-3, 2);
  for (int64_t r = 0; r < x.rows(); ++r) {
    const float s = static_cast<float>(std::pow(10.0, exponent(rng)));
    for (int64_t i = 0; i < c.ne[0]; ++i) x.f32(i, r) *= s;  // rows are contiguous: i1 = r
  }
  return x;
}

// gtest names a failing case by this instead of its bytes.
void PrintTo(const NormCase& c, std::ostream* os) {
  *os << c.name;
}

class RmsNorm : public ConformanceTestWithParam<NormCase> {};
class Norm : public ConformanceTestWithParam<NormCase> {};

TEST_P(RmsNorm, MatchesReference) {
  const NormCase& c = GetParam();
  Rng rng(case_seed("RMS_NORM/" + c.name));
  const HostTensor x = scaled_rows(c, rng);
  HostTensor dst = contiguous(GgmlType::F32, c.ne);
  pi_node node{};
  node.op = PI_OP_RMS_NORM;
  node.f[0] = c.eps;
  const NodeRun r = backend().run(node, {&x}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  const int64_t k = c.ne[0];
  std::vector<double> in = x.values(), want, bound;
  for (int64_t row = 0; row < x.rows(); ++row) {
    const double* v = in.data() + row * k;
    double ss = 0;
    for (int64_t i = 0; i < k; ++i) ss += v[i] * v[i];
    const double s = 1 / std::sqrt(ss / k + c.eps);
    for (int64_t i = 0; i < k; ++i) {
      want.push_back(v[i] * s);
      bound.push_back(rms_norm_bound(k, v[i] * s));
    }
  }
  expect_output(dst, want, bound, "RMS_NORM " + c.name);
}

TEST_P(Norm, MatchesReference) {
  const NormCase& c = GetParam();
  Rng rng(case_seed("NORM/" + c.name));
  const HostTensor x = scaled_rows(c, rng);
  HostTensor dst = contiguous(GgmlType::F32, c.ne);
  pi_node node{};
  node.op = PI_OP_NORM;
  node.f[0] = c.eps;
  const NodeRun r = backend().run(node, {&x}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  const int64_t k = c.ne[0];
  std::vector<double> in = x.values(), want, bound;
  for (int64_t row = 0; row < x.rows(); ++row) {
    const double* v = in.data() + row * k;
    double sum = 0, sum_abs = 0;
    for (int64_t i = 0; i < k; ++i) {
      sum += v[i];
      sum_abs += std::fabs(v[i]);
    }
    const double mean = sum / k;
    double var = 0;
    for (int64_t i = 0; i < k; ++i) var += (v[i] - mean) * (v[i] - mean);
    const double s = 1 / std::sqrt(var / k + c.eps);
    for (int64_t i = 0; i < k; ++i) {
      want.push_back((v[i] - mean) * s);
      bound.push_back(norm_bound(k, v[i], sum_abs / k, s));
    }
  }
  expect_output(dst, want, bound, "NORM " + c.name);
}

const NormCase kCases[] = {
    {"model_rows", {2048, 3, 2, 1}, 1e-5f, 0.0},
    {"ragged", {67, 5, 1, 1}, 1e-6f, 0.0},
    {"one_element", {1, 4, 1, 1}, 1e-5f, 0.0},
    {"offset_mean", {300, 3, 1, 1}, 1e-5f, 3.0},
    // Longer than a workgroup keeps in registers (GPU backends), ragged.
    {"long_rows", {5000, 2, 1, 1}, 1e-5f, 1.0},
};

std::string case_name(const ::testing::TestParamInfo<NormCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, RmsNorm, ::testing::ValuesIn(kCases), case_name);
INSTANTIATE_TEST_SUITE_P(Shapes, Norm, ::testing::ValuesIn(kCases), case_name);

}  // namespace
}  // namespace polyinfer::conformance
