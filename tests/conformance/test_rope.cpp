// ROPE (Su et al. 2021) on x F32 [D, H, T] at positions I32 [T], with ggml's
// parameters: mode 0 rotates pairs (2i, 2i+1), mode 2 (NeoX) pairs
// (i, i + n_rot/2); dims >= n_rot pass through. Frequency i (0 <= i < n_rot/2):
//   θ_extrap = pos · base^(-2i/n_rot) / ff_i          (ff: optional freq factors)
//   θ = freq_scale · θ_extrap, or with YaRN (ext_factor != 0, Peng et al. 2023):
//   θ = freq_scale · θ_extrap · (1 - mix) + θ_extrap · mix,
//       mix = ext_factor · (1 - clamp((i - low) / max(0.001, high - low), 0, 1)),
//       low = max(0, floor(c(beta_fast))), high = min(n_rot - 1, ceil(c(beta_slow))),
//       c(r) = n_rot · ln(n_ctx_orig / (2π r)) / (2 ln base),
//   mscale = attn_factor (· (1 + 0.1 ln(1/freq_scale)) with YaRN), and
//   (x_a, x_b) -> mscale · (x_a cos θ - x_b sin θ, x_a sin θ + x_b cos θ).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <ostream>
#include <string>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

struct RopeCase {
  std::string name;
  int mode, n_rot;
  int64_t d, h, t;
  bool freq_factors;
  float base, freq_scale, ext_factor;
  int max_pos;
};

constexpr int kNeox = 2;
constexpr int kCtxOrig = 4096;
constexpr float kAttnFactor = 1.0f, kBetaFast = 32.0f, kBetaSlow = 1.0f;

double corr_dim(const RopeCase& c, double rotations) {
  return c.n_rot * std::log(kCtxOrig / (rotations * 2 * std::numbers::pi)) /
         (2 * std::log(static_cast<double>(c.base)));
}

struct Angle {
  double theta, mscale;
};

// The YaRN ramp is cut at floor/ceil of corr_dim: a test whose corr_dim lies
// next to an integer would depend on float32 vs float64 rounding there.
void expect_clear_of_integers(double v) {
  EXPECT_GT(std::fabs(v - std::round(v)), 1e-3) << "corr_dim " << v << " too close to an integer";
}

Angle angle(const RopeCase& c, int64_t i, int32_t pos, double ff) {
  const double extrap = pos * std::pow(static_cast<double>(c.base), -2.0 * i / c.n_rot) / ff;
  if (c.ext_factor == 0.0f) return {c.freq_scale * extrap, kAttnFactor};
  const double fast = corr_dim(c, kBetaFast), slow = corr_dim(c, kBetaSlow);
  expect_clear_of_integers(fast);
  expect_clear_of_integers(slow);
  const double low = std::max(0.0, std::floor(fast));
  const double high = std::min(c.n_rot - 1.0, std::ceil(slow));
  const double y = (i - low) / std::max(0.001, high - low);
  const double mix = c.ext_factor * (1 - std::clamp(y, 0.0, 1.0));
  const double interp = c.freq_scale * extrap;
  return {interp * (1 - mix) + extrap * mix,
          kAttnFactor * (1 + 0.1 * std::log(1.0 / c.freq_scale))};
}

// gtest names a failing case by this instead of its bytes.
void PrintTo(const RopeCase& c, std::ostream* os) {
  *os << c.name;
}

class Rope : public ConformanceTestWithParam<RopeCase> {};

TEST_P(Rope, MatchesReference) {
  const RopeCase& c = GetParam();
  Rng rng(case_seed("ROPE/" + c.name));
  HostTensor x = contiguous(GgmlType::F32, {c.d, c.h, c.t, 1});
  fill_normal(x, rng);
  HostTensor pos = contiguous(GgmlType::I32, {c.t, 1, 1, 1});
  std::uniform_int_distribution<int32_t> pick(0, c.max_pos);
  for (int64_t t = 0; t < c.t; ++t) pos.i32(t) = pick(rng);
  pos.i32(0) = 0;
  HostTensor ff = contiguous(GgmlType::F32, {c.n_rot / 2, 1, 1, 1});
  std::uniform_real_distribution<float> factor(1.0f, 8.0f);
  for (int64_t i = 0; i < c.n_rot / 2; ++i) ff.f32(i) = factor(rng);
  HostTensor dst = contiguous(GgmlType::F32, x.ne);

  pi_node node{};
  node.op = PI_OP_ROPE;
  node.i[0] = c.mode;
  node.i[1] = c.n_rot;
  node.i[2] = kCtxOrig;
  const float params[] = {c.base, c.freq_scale, c.ext_factor, kAttnFactor, kBetaFast, kBetaSlow};
  std::copy(std::begin(params), std::end(params), node.f);
  const NodeRun r = backend().run(node, {&x, &pos, c.freq_factors ? &ff : nullptr}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  std::vector<double> want, bound;
  for (int64_t t = 0; t < c.t; ++t) {
    for (int64_t h = 0; h < c.h; ++h) {
      const std::vector<double> in = x.row_values(h, t);
      std::vector<double> out = in, err(in.size(), 0.0);
      for (int64_t i = 0; i < c.n_rot / 2; ++i) {
        const Angle a = angle(c, i, pos.i32(t), c.freq_factors ? ff.f32(i) : 1.0);
        const int64_t ia = c.mode == kNeox ? i : 2 * i;
        const int64_t ib = c.mode == kNeox ? i + c.n_rot / 2 : 2 * i + 1;
        const double cs = std::cos(a.theta) * a.mscale, sn = std::sin(a.theta) * a.mscale;
        out[ia] = in[ia] * cs - in[ib] * sn;
        out[ib] = in[ia] * sn + in[ib] * cs;
        err[ia] = err[ib] = rope_bound(i, a.theta, in[ia], in[ib], a.mscale);
      }
      want.insert(want.end(), out.begin(), out.end());
      bound.insert(bound.end(), err.begin(), err.end());
    }
  }
  expect_output(dst, want, bound, "ROPE " + c.name);
}

const RopeCase kCases[] = {
    {"normal", 0, 64, 64, 4, 5, false, 10000.0f, 1.0f, 0.0f, 4095},
    {"neox", kNeox, 64, 64, 4, 5, false, 1000000.0f, 1.0f, 0.0f, 4095},
    {"normal_partial_freq_factors", 0, 32, 48, 3, 6, true, 10000.0f, 1.0f, 0.0f, 2047},
    {"neox_partial_freq_factors", kNeox, 32, 48, 3, 6, true, 500000.0f, 1.0f, 0.0f, 2047},
    {"yarn_neox", kNeox, 64, 64, 2, 7, false, 10000.0f, 0.25f, 1.0f, 16383},
    {"yarn_normal_partial", 0, 48, 64, 2, 7, false, 10000.0f, 0.25f, 1.0f, 16383},
};

INSTANTIATE_TEST_SUITE_P(Modes, Rope, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace polyinfer::conformance
