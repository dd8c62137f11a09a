// Element-wise ops: SCALE, SILU (Elfwing et al. 2017), GELU (tanh
// approximation, Hendrycks & Gimpel 2016, as ggml_gelu) and SWIGLU (Shazeer 2020:
// silu(gate) * up). SILU and SWIGLU (every llama FFN) are vectorized with
// Highway's exp (1 ulp). SCALE is a plain loop the compiler vectorizes (memory
// bound, as ADD/MUL); GELU stays scalar.
#include <cmath>

#include "backends/cpu/tensor_rows.hpp"

// clang-format off
// Highway's per-target compilation needs this order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/ops_unary.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
// clang-format on

#ifndef POLYINFER_CPU_UNARY_SHARED
#define POLYINFER_CPU_UNARY_SHARED
namespace polyinfer::cpu {
namespace {

// The scalar forms, for row tails and GELU.
float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

float gelu(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCoef = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}

}  // namespace
}  // namespace polyinfer::cpu
#endif

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// x * sigmoid(x) with e = exp(-|x|) <= 1: sigmoid is 1/(1+e) for x >= 0 and
// e/(1+e) below, so Exp never leaves its valid range (x/(1+exp(-x)) would
// overflow it for x < -104) and large negative x underflows gracefully to 0.
template <class V>
V Silu(DF df, V x) {
  const V one = hn::Set(df, 1.0f);
  const V e = hn::Exp(df, hn::Neg(hn::Abs(x)));
  const V sigmoid = hn::Div(hn::IfThenElse(hn::Lt(x, hn::Zero(df)), e, one), hn::Add(one, e));
  return hn::Mul(x, sigmoid);
}

}  // namespace

void SiluRow(const float* HWY_RESTRICT x, float* HWY_RESTRICT out, int64_t k) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) hn::StoreU(Silu(df, hn::LoadU(df, x + i)), df, out + i);
  for (; i < k; ++i) out[i] = silu(x[i]);
}

void SwigluRow(const float* HWY_RESTRICT gate, const float* HWY_RESTRICT up,
               float* HWY_RESTRICT out, int64_t k) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) {
    hn::StoreU(hn::Mul(Silu(df, hn::LoadU(df, gate + i)), hn::LoadU(df, up + i)), df, out + i);
  }
  for (; i < k; ++i) out[i] = silu(gate[i]) * up[i];
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {
namespace {

HWY_EXPORT(SiluRow);
HWY_EXPORT(SwigluRow);

bool supports_unary(const pi_node& n) {
  return is_f32_rows(n.src[0]) && is_f32_rows(n.dst) && same_shape(n.src[0], n.dst);
}

bool supports_swiglu(const pi_node& n) {
  return supports_unary(n) && is_f32_rows(n.src[1]) && same_shape(n.src[0], n.src[1]);
}

size_t no_work(const pi_node&, int) {
  return 0;
}

// Calls row(x, out, k) for this thread's rows of src0.
template <typename F>
void for_rows(const OpContext& ctx, F row) {
  const pi_tensor& a = ctx.node.src[0];
  const Range rows = split_range(nrows(a), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(a, r);
    row(ri, row_f32(a, ri), row_f32(ctx.node.dst, ri), a.ne[0]);
  }
}

void run_scale(const OpContext& ctx) {
  const float scale = ctx.node.f[0];
  for_rows(ctx, [scale](RowIndex, const float* x, float* out, int64_t k) {
    for (int64_t i = 0; i < k; ++i) out[i] = x[i] * scale;
  });
}

void run_silu(const OpContext& ctx) {
  for_rows(ctx, [](RowIndex, const float* x, float* out, int64_t k) {
    HWY_DYNAMIC_DISPATCH(SiluRow)(x, out, k);
  });
}

void run_gelu(const OpContext& ctx) {
  for_rows(ctx, [](RowIndex, const float* x, float* out, int64_t k) {
    for (int64_t i = 0; i < k; ++i) out[i] = gelu(x[i]);
  });
}

void run_swiglu(const OpContext& ctx) {
  for_rows(ctx, [&](RowIndex ri, const float* gate, float* out, int64_t k) {
    HWY_DYNAMIC_DISPATCH(SwigluRow)(gate, row_f32(ctx.node.src[1], ri), out, k);
  });
}

}  // namespace

const OpImpl kOpScale{supports_unary, no_work, run_scale};
const OpImpl kOpSilu{supports_unary, no_work, run_silu};
const OpImpl kOpGelu{supports_unary, no_work, run_gelu};
const OpImpl kOpSwiglu{supports_swiglu, no_work, run_swiglu};

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
