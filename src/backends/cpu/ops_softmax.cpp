// SOFT_MAX over dim 0 of scale * x + mask, the mask [n, rows] broadcast over
// dims 2 and 3. Max-subtracted for stability; a row that is all -inf gives 0s.
#include <cmath>
#include <limits>

#include "backends/cpu/tensor_rows.hpp"

namespace polyinfer::cpu {
namespace {

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
  const float scale = ctx.node.f[0];
  const int64_t k = x.ne[0];
  const Range rows = split_range(nrows(x), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(x, r);
    const float* in = row_f32(x, ri);
    const float* mask = present(m) ? row_f32(m, {ri.i1, 0, 0}) : nullptr;
    float* out = row_f32(ctx.node.dst, ri);
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < k; ++i) {
      out[i] = in[i] * scale + (mask ? mask[i] : 0.0f);
      if (out[i] > mx) mx = out[i];
    }
    if (mx == -std::numeric_limits<float>::infinity()) {
      for (int64_t i = 0; i < k; ++i) out[i] = 0.0f;
      continue;
    }
    double sum = 0;
    for (int64_t i = 0; i < k; ++i) {
      out[i] = std::exp(out[i] - mx);
      sum += out[i];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < k; ++i) out[i] *= inv;
  }
}

}  // namespace

const OpImpl kOpSoftMax{supports_softmax, no_work, run_softmax};

}  // namespace polyinfer::cpu
