// Element-wise ops: SCALE, SILU (Elfwing et al. 2017), GELU (tanh
// approximation, Hendrycks & Gimpel 2016, as ggml_gelu) and SWIGLU (Shazeer 2020:
// silu(gate) * up).
#include <cmath>

#include "backends/cpu/tensor_rows.hpp"

namespace polyinfer::cpu {
namespace {

bool supports_unary(const pi_node& n) {
  return is_f32_rows(n.src[0]) && is_f32_rows(n.dst) && same_shape(n.src[0], n.dst);
}

bool supports_swiglu(const pi_node& n) {
  return supports_unary(n) && is_f32_rows(n.src[1]) && same_shape(n.src[0], n.src[1]);
}

size_t no_work(const pi_node&, int) {
  return 0;
}

float silu(float x) {
  return x / (1.0f + std::exp(-x));
}

float gelu(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCoef = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}

template <typename F>
void run_unary(const OpContext& ctx, F f) {
  const pi_tensor& a = ctx.node.src[0];
  const int64_t k = a.ne[0];
  const Range rows = split_range(nrows(a), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(a, r);
    const float* x = row_f32(a, ri);
    float* out = row_f32(ctx.node.dst, ri);
    for (int64_t i = 0; i < k; ++i) out[i] = f(x[i]);
  }
}

void run_scale(const OpContext& ctx) {
  const float s = ctx.node.f[0];
  run_unary(ctx, [s](float x) { return x * s; });
}
void run_silu(const OpContext& ctx) {
  run_unary(ctx, silu);
}
void run_gelu(const OpContext& ctx) {
  run_unary(ctx, gelu);
}

void run_swiglu(const OpContext& ctx) {
  const pi_tensor &g = ctx.node.src[0], &u = ctx.node.src[1];
  const int64_t k = g.ne[0];
  const Range rows = split_range(nrows(g), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(g, r);
    const float* x = row_f32(g, ri);
    const float* y = row_f32(u, ri);
    float* out = row_f32(ctx.node.dst, ri);
    for (int64_t i = 0; i < k; ++i) out[i] = silu(x[i]) * y[i];
  }
}

}  // namespace

const OpImpl kOpScale{supports_unary, no_work, run_scale};
const OpImpl kOpSilu{supports_unary, no_work, run_silu};
const OpImpl kOpGelu{supports_unary, no_work, run_gelu};
const OpImpl kOpSwiglu{supports_swiglu, no_work, run_swiglu};

}  // namespace polyinfer::cpu
