// RMS_NORM (Zhang & Sennrich 2019) and NORM (layer norm without affine, Ba et
// al. 2016) over dim 0. RMS_NORM runs in every transformer block, so its sum of
// squares and scaling are vectorized (float32 sums in four vector accumulators:
// positive terms, so any order stays within the tolerance of docs/OPS.md).
// NORM (no llama-family model uses it) sums in double.
#include <cmath>

#include "backends/cpu/tensor_rows.hpp"

// clang-format off
// Highway's per-target compilation needs this order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/ops_norm.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// out[0..k) = x[0..k) / sqrt(mean(x²) + eps).
void RmsNormRow(const float* HWY_RESTRICT x, float* HWY_RESTRICT out, int64_t k, float eps) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  auto s0 = hn::Zero(df), s1 = hn::Zero(df), s2 = hn::Zero(df), s3 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 4 * lanes <= k; i += 4 * lanes) {
    const auto a = hn::LoadU(df, x + i), b = hn::LoadU(df, x + i + lanes);
    const auto c = hn::LoadU(df, x + i + 2 * lanes), d = hn::LoadU(df, x + i + 3 * lanes);
    s0 = hn::MulAdd(a, a, s0);
    s1 = hn::MulAdd(b, b, s1);
    s2 = hn::MulAdd(c, c, s2);
    s3 = hn::MulAdd(d, d, s3);
  }
  for (; i + lanes <= k; i += lanes) {
    const auto a = hn::LoadU(df, x + i);
    s0 = hn::MulAdd(a, a, s0);
  }
  float ss = hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < k; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(k) + eps);
  const auto vscale = hn::Set(df, scale);
  i = 0;
  for (; i + lanes <= k; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(df, x + i), vscale), df, out + i);
  for (; i < k; ++i) out[i] = x[i] * scale;
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {
namespace {

HWY_EXPORT(RmsNormRow);

bool supports_norm(const pi_node& n) {
  return is_f32_rows(n.src[0]) && is_f32_rows(n.dst) && same_shape(n.src[0], n.dst);
}

size_t no_work(const pi_node&, int) {
  return 0;
}

void run_rms_norm(const OpContext& ctx) {
  const pi_tensor& x = ctx.node.src[0];
  const Range rows = split_range(nrows(x), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(x, r);
    HWY_DYNAMIC_DISPATCH(RmsNormRow)
    (row_f32(x, ri), row_f32(ctx.node.dst, ri), x.ne[0], ctx.node.f[0]);
  }
}

void run_norm(const OpContext& ctx) {
  const pi_tensor& x = ctx.node.src[0];
  const float eps = ctx.node.f[0];
  const int64_t k = x.ne[0];
  const Range rows = split_range(nrows(x), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(x, r);
    const float* in = row_f32(x, ri);
    float* out = row_f32(ctx.node.dst, ri);
    double sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += in[i];
    const double mean = sum / k;
    double var = 0;
    for (int64_t i = 0; i < k; ++i) var += (in[i] - mean) * (in[i] - mean);
    const double scale = 1.0 / std::sqrt(var / k + eps);
    for (int64_t i = 0; i < k; ++i) out[i] = static_cast<float>((in[i] - mean) * scale);
  }
}

}  // namespace

const OpImpl kOpRmsNorm{supports_norm, no_work, run_rms_norm};
const OpImpl kOpNorm{supports_norm, no_work, run_norm};

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
