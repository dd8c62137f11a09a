// SOFT_MAX over dim 0 of z = f[0]·x + mask, x F32 [n, rows, b2, b3], mask
// optional F32 [n, rows'] (rows' >= rows; row r of every (b2, b3) uses mask
// row r). p_i = exp(z_i - max z) / Σ exp(z_j - max z); a row whose z is all
// -inf gives 0s.
#include <cmath>
#include <limits>
#include <ostream>
#include <string>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct SoftMaxCase {
  std::string name;
  Shape ne;
  int64_t mask_rows;  // 0: no mask
  float scale;
};

// Mask entries: mostly finite biases in [-4, 0], a quarter -inf; row 1 all
// -inf (a fully masked row).
HostTensor random_mask(const SoftMaxCase& c, Rng& rng) {
  HostTensor m = contiguous(GgmlType::F32, {c.ne[0], c.mask_rows, 1, 1});
  std::uniform_real_distribution<float> bias(-4.0f, 0.0f);
  std::bernoulli_distribution hidden(0.25);
  for (int64_t r = 0; r < c.mask_rows; ++r) {
    for (int64_t i = 0; i < c.ne[0]; ++i) {
      m.f32(i, r) = r == 1 || hidden(rng) ? -std::numeric_limits<float>::infinity() : bias(rng);
    }
  }
  return m;
}

// One row of the reference: probabilities and their bounds.
void reference_row(const SoftMaxCase& c, const std::vector<double>& x, const double* mask,
                   std::vector<double>& want, std::vector<double>& bound) {
  const size_t n = x.size();
  std::vector<double> z(n), z_mag(n);
  double z_max = -kInf, z_max_mag = 0;
  for (size_t i = 0; i < n; ++i) {
    const double m = mask ? mask[i] : 0.0;
    z[i] = c.scale * x[i] + m;
    z_mag[i] = std::fabs(c.scale * x[i]) + std::fabs(m);
    z_max = std::max(z_max, z[i]);
    if (z[i] != -kInf) z_max_mag = std::max(z_max_mag, z_mag[i]);
  }
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += z[i] == -kInf ? 0.0 : std::exp(z[i] - z_max);
  for (size_t i = 0; i < n; ++i) {
    if (z[i] == -kInf) {  // masked: exactly 0, also for a fully masked row
      want.push_back(0.0);
      bound.push_back(0.0);
      continue;
    }
    const double p = std::exp(z[i] - z_max) / sum;
    want.push_back(p);
    bound.push_back(softmax_bound(p, static_cast<int64_t>(n), z_mag[i], z_max_mag));
  }
}

// gtest names a failing case by this instead of its bytes.
void PrintTo(const SoftMaxCase& c, std::ostream* os) {
  *os << c.name;
}

class SoftMax : public ConformanceTestWithParam<SoftMaxCase> {};

TEST_P(SoftMax, MatchesReference) {
  const SoftMaxCase& c = GetParam();
  Rng rng(case_seed("SOFT_MAX/" + c.name));
  HostTensor x = contiguous(GgmlType::F32, c.ne);
  fill_normal(x, rng, 4.0);
  const HostTensor mask = c.mask_rows > 0 ? random_mask(c, rng) : HostTensor{};
  HostTensor dst = contiguous(GgmlType::F32, c.ne);
  pi_node node{};
  node.op = PI_OP_SOFT_MAX;
  node.f[0] = c.scale;
  const NodeRun r = backend().run(node, {&x, c.mask_rows > 0 ? &mask : nullptr}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  std::vector<double> want, bound;
  const std::vector<double> no_mask;
  for (int64_t i3 = 0; i3 < c.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < c.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < c.ne[1]; ++i1) {
        const std::vector<double> m = c.mask_rows > 0 ? mask.row_values(i1) : no_mask;
        reference_row(c, x.row_values(i1, i2, i3), m.empty() ? nullptr : m.data(), want, bound);
      }
    }
  }
  expect_output(dst, want, bound, "SOFT_MAX " + c.name);
}

const SoftMaxCase kCases[] = {
    {"plain", {37, 5, 2, 1}, 0, 1.0f},
    {"masked_scaled", {37, 5, 2, 1}, 8, 0.125f},  // mask has more rows than x
    {"long_rows", {1000, 3, 1, 1}, 0, 0.7f},
    {"long_rows_masked", {515, 4, 1, 2}, 4, 1.3f},
};

INSTANTIATE_TEST_SUITE_P(Shapes, SoftMax, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace polyinfer::conformance
