// ADD and MUL with ggml's broadcast: src1's dims divide src0's, and src1 is
// repeated along each (the norm weight [K] against activations [K, T]). Rows
// of equal length (every use in the model) are vectorized; a src1 row shorter
// than src0's is repeated element by element.
#include "backends/cpu/tensor_rows.hpp"

// clang-format off
// Highway's per-target compilation needs this order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/ops_binary.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void AddRow(const float* HWY_RESTRICT x, const float* HWY_RESTRICT y, float* HWY_RESTRICT out,
            int64_t k) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) {
    hn::StoreU(hn::Add(hn::LoadU(df, x + i), hn::LoadU(df, y + i)), df, out + i);
  }
  for (; i < k; ++i) out[i] = x[i] + y[i];
}

void MulRow(const float* HWY_RESTRICT x, const float* HWY_RESTRICT y, float* HWY_RESTRICT out,
            int64_t k) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= k; i += lanes) {
    hn::StoreU(hn::Mul(hn::LoadU(df, x + i), hn::LoadU(df, y + i)), df, out + i);
  }
  for (; i < k; ++i) out[i] = x[i] * y[i];
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {
namespace {

HWY_EXPORT(AddRow);
HWY_EXPORT(MulRow);

bool supports_binary(const pi_node& n) {
  const pi_tensor &a = n.src[0], &b = n.src[1];
  if (!is_f32_rows(a) || !is_f32_rows(b) || !is_f32_rows(n.dst) || !same_shape(a, n.dst)) {
    return false;
  }
  for (int d = 0; d < 4; ++d) {
    if (b.ne[d] <= 0 || a.ne[d] % b.ne[d] != 0) return false;
  }
  return true;
}

size_t no_work(const pi_node&, int) {
  return 0;
}

using RowFn = void (*)(const float*, const float*, float*, int64_t);

// `row` for rows of equal length, `f` element by element otherwise.
template <typename F>
void run_binary(const OpContext& ctx, RowFn row, F f) {
  const pi_tensor &a = ctx.node.src[0], &b = ctx.node.src[1];
  const int64_t k = a.ne[0], kb = b.ne[0];
  const Range rows = split_range(nrows(a), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(a, r);
    const RowIndex rb{ri.i1 % b.ne[1], ri.i2 % b.ne[2], ri.i3 % b.ne[3]};
    const float* x = row_f32(a, ri);
    const float* y = row_f32(b, rb);
    float* out = row_f32(ctx.node.dst, ri);
    if (kb == k) {
      row(x, y, out, k);
    } else {
      for (int64_t i = 0; i < k; ++i) out[i] = f(x[i], y[i % kb]);
    }
  }
}

void run_add(const OpContext& ctx) {
  run_binary(ctx, HWY_DYNAMIC_DISPATCH(AddRow), [](float x, float y) { return x + y; });
}
void run_mul(const OpContext& ctx) {
  run_binary(ctx, HWY_DYNAMIC_DISPATCH(MulRow), [](float x, float y) { return x * y; });
}

}  // namespace

const OpImpl kOpAdd{supports_binary, no_work, run_add};
const OpImpl kOpMul{supports_binary, no_work, run_mul};

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
