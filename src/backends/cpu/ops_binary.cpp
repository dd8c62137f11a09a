// ADD and MUL with ggml's broadcast: src1's dims divide src0's, and src1 is
// repeated along each (the norm weight [K] against activations [K, T]).
// Plain loops on purpose: the compiler vectorizes them and they run at memory
// speed; a Highway version measured equal on AVX2 and 10-20% slower with
// AVX-512 on Zen 4 (polyinfer-bench-ops BM_Add, docs in BENCHMARKS.md).
#include "backends/cpu/tensor_rows.hpp"

namespace polyinfer::cpu {
namespace {

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

template <typename F>
void run_binary(const OpContext& ctx, F f) {
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
      for (int64_t i = 0; i < k; ++i) out[i] = f(x[i], y[i]);
    } else {
      for (int64_t i = 0; i < k; ++i) out[i] = f(x[i], y[i % kb]);
    }
  }
}

void run_add(const OpContext& ctx) {
  run_binary(ctx, [](float x, float y) { return x + y; });
}
void run_mul(const OpContext& ctx) {
  run_binary(ctx, [](float x, float y) { return x * y; });
}

}  // namespace

const OpImpl kOpAdd{supports_binary, no_work, run_add};
const OpImpl kOpMul{supports_binary, no_work, run_mul};

}  // namespace polyinfer::cpu
