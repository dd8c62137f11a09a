// SOFT_MAX over dim 0 of scale * x + mask, the mask [n, rows] broadcast over
// dims 2 and 3. Max-subtracted for stability; a row that is all -inf gives 0s.
// Vectorized, with Highway's exp (1 ulp; exp(-inf) = 0); row tails use std::exp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/tensor_rows.hpp"

// clang-format off
// Highway's per-target compilation needs this order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/ops_softmax.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// out = scale * x + mask (mask may be null); returns the max of out.
float scaled_logits(const float* x, const float* mask, float scale, float* out, int64_t k) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vscale = hn::Set(df, scale);
  auto vmax = hn::Set(df, kNegInf);
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) {
    auto z = hn::Mul(hn::LoadU(df, x + i), vscale);
    if (mask != nullptr) z = hn::Add(z, hn::LoadU(df, mask + i));
    vmax = hn::Max(vmax, z);
    hn::StoreU(z, df, out + i);
  }
  float mx = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (; i < k; ++i) {
    out[i] = x[i] * scale + (mask != nullptr ? mask[i] : 0.0f);
    mx = out[i] > mx ? out[i] : mx;
  }
  return mx;
}

// out = exp(out - mx) in place; returns the sum.
float exponentiate(float* out, float mx, int64_t k) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vmx = hn::Set(df, mx);
  auto vsum = hn::Zero(df);
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) {
    // Masked (-inf) logits are kept out of Exp, whose valid range ends at -FLT_MAX.
    const auto z = hn::LoadU(df, out + i);
    const auto e =
        hn::IfThenZeroElse(hn::Eq(z, hn::Set(df, kNegInf)), hn::Exp(df, hn::Sub(z, vmx)));
    vsum = hn::Add(vsum, e);
    hn::StoreU(e, df, out + i);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (; i < k; ++i) {
    out[i] = std::exp(out[i] - mx);
    sum += out[i];
  }
  return sum;
}

void scale_in_place(float* out, float s, int64_t k) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vs = hn::Set(df, s);
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(df, out + i), vs), df, out + i);
  for (; i < k; ++i) out[i] *= s;
}

}  // namespace

// One row: out[0..k) = softmax(scale * x + mask).
void SoftMaxRow(const float* HWY_RESTRICT x, const float* HWY_RESTRICT mask, float scale,
                float* HWY_RESTRICT out, int64_t k) {
  const float mx = scaled_logits(x, mask, scale, out, k);
  if (mx == kNegInf) {
    std::fill(out, out + k, 0.0f);  // fully masked
    return;
  }
  scale_in_place(out, 1.0f / exponentiate(out, mx, k), k);
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {
namespace {

HWY_EXPORT(SoftMaxRow);

bool supports_softmax(const pi_node& n) {
  const pi_tensor &x = n.src[0], &m = n.src[1];
  if (!is_f32_rows(x) || !is_f32_rows(n.dst) || !same_shape(x, n.dst)) return false;
  return !present(m) || (is_f32_rows(m) && m.ne[0] == x.ne[0] && m.ne[1] >= x.ne[1]);
}

size_t no_work(const pi_node&, int) {
  return 0;
}

void run_softmax(const OpContext& ctx) {
  const pi_tensor &x = ctx.node.src[0], &m = ctx.node.src[1];
  const Range rows = split_range(nrows(x), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(x, r);
    const float* mask = present(m) ? row_f32(m, {ri.i1, 0, 0}) : nullptr;
    HWY_DYNAMIC_DISPATCH(SoftMaxRow)
    (row_f32(x, ri), mask, ctx.node.f[0], row_f32(ctx.node.dst, ri), x.ne[0]);
  }
}

}  // namespace

const OpImpl kOpSoftMax{supports_softmax, no_work, run_softmax};

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
