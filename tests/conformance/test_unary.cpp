// Element-wise ops on F32: SCALE (x·f[0]), SILU (x·σ(x), Elfwing et al. 2017),
// GELU (tanh approximation, Hendrycks & Gimpel 2016), SWIGLU (silu(src0)·src1,
// Shazeer 2020). Inputs ~ N(0, 3) so both tails of σ and tanh are reached,
// plus arguments past float32's exp range.
#include <cmath>
#include <iterator>
#include <numbers>
#include <ostream>
#include <string>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

constexpr double kSigma = 3.0;
constexpr float kScale = 0.37f;

double silu(double x) {
  return x / (1 + std::exp(-x));
}

double gelu(double x) {
  const double sqrt_2_over_pi = std::sqrt(2 / std::numbers::pi);
  return 0.5 * x * (1 + std::tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

// Arguments where exp(-x) overflows float32 or exp's valid range ends
// (|x| > 88.7, > 104), at the start of row 0 when it is long enough; and
// -85..-88.5, where silu is a normal float (~1e-35..4e-37) but e^-x passes
// 2^126 and e^x goes subnormal, which a GPU flushes to zero.
void plant_extremes(HostTensor& x) {
  constexpr float kExtremes[] = {-200.0f, -104.5f, -90.0f, -88.0f, -30.0f, 30.0f,  88.0f, 90.0f,
                                 104.5f,  200.0f,  -85.0f, -86.0f, -87.0f, -87.5f, -88.5f};
  if (x.ne[0] < static_cast<int64_t>(std::size(kExtremes))) return;
  for (size_t i = 0; i < std::size(kExtremes); ++i) x.f32(static_cast<int64_t>(i)) = kExtremes[i];
}

struct UnaryCase {
  std::string name;
  pi_op op;
  Shape ne;
};

// gtest names a failing case by this instead of its bytes.
void PrintTo(const UnaryCase& c, std::ostream* os) {
  *os << c.name;
}

class Unary : public ConformanceTestWithParam<UnaryCase> {};

TEST_P(Unary, MatchesReference) {
  const UnaryCase& c = GetParam();
  Rng rng(case_seed("UNARY/" + c.name));
  HostTensor x = contiguous(GgmlType::F32, c.ne);
  HostTensor y = contiguous(GgmlType::F32, c.ne);
  fill_normal(x, rng, kSigma);
  fill_normal(y, rng, kSigma);
  plant_extremes(x);
  HostTensor dst = contiguous(GgmlType::F32, c.ne);
  pi_node node{};
  node.op = c.op;
  node.f[0] = kScale;
  const bool binary = c.op == PI_OP_SWIGLU;
  const NodeRun r = binary ? backend().run(node, {&x, &y}, dst) : backend().run(node, {&x}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  const std::vector<double> xv = x.values(), yv = y.values();
  std::vector<double> want, bound;
  for (size_t i = 0; i < xv.size(); ++i) {
    switch (c.op) {
      case PI_OP_SCALE:
        want.push_back(xv[i] * kScale);
        bound.push_back(elementwise_bound(want.back()));
        break;
      case PI_OP_SILU:
        want.push_back(silu(xv[i]));
        bound.push_back(silu_bound(want.back()));
        break;
      case PI_OP_GELU:
        want.push_back(gelu(xv[i]));
        bound.push_back(gelu_bound(xv[i], want.back()));
        break;
      default:
        want.push_back(silu(xv[i]) * yv[i]);
        bound.push_back(silu_bound(want.back()));
    }
  }
  expect_output(dst, want, bound, c.name);
}

const UnaryCase kCases[] = {
    {"scale", PI_OP_SCALE, {1000, 3, 2, 1}},
    {"silu", PI_OP_SILU, {1000, 3, 2, 1}},
    {"gelu", PI_OP_GELU, {1000, 3, 2, 1}},
    {"swiglu", PI_OP_SWIGLU, {1000, 3, 2, 1}},
    {"swiglu_ffn", PI_OP_SWIGLU, {8192, 3, 1, 1}},
    {"silu_short", PI_OP_SILU, {5, 2, 1, 1}},
    // Prompt-sized (64 rows or more: the CUDA backend's four-wide kernel).
    {"swiglu_prompt", PI_OP_SWIGLU, {1024, 80, 1, 1}},
    {"scale_prompt", PI_OP_SCALE, {256, 33, 2, 1}},
};

INSTANTIATE_TEST_SUITE_P(Ops, Unary, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace polyinfer::conformance
