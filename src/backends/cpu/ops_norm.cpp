// RMS_NORM (Zhang & Sennrich 2019) and NORM (layer norm without affine, Ba et
// al. 2016) over dim 0. Sums in double: rows are up to 8k long and the cost is
// negligible next to the matmuls.
#include <cmath>

#include "backends/cpu/tensor_rows.hpp"

namespace polyinfer::cpu {
namespace {

bool supports_norm(const pi_node& n) {
  return is_f32_rows(n.src[0]) && is_f32_rows(n.dst) && same_shape(n.src[0], n.dst);
}

size_t no_work(const pi_node&, int) {
  return 0;
}

void run_rms_norm(const OpContext& ctx) {
  const pi_tensor& x = ctx.node.src[0];
  const float eps = ctx.node.f[0];
  const int64_t k = x.ne[0];
  const Range rows = split_range(nrows(x), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(x, r);
    const float* in = row_f32(x, ri);
    float* out = row_f32(ctx.node.dst, ri);
    double ss = 0;
    for (int64_t i = 0; i < k; ++i) ss += static_cast<double>(in[i]) * in[i];
    const float scale = static_cast<float>(1.0 / std::sqrt(ss / k + eps));
    for (int64_t i = 0; i < k; ++i) out[i] = in[i] * scale;
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
