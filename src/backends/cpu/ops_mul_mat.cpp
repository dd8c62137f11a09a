// TEMPORARY scalar MUL_MAT (replaced by the Highway kernels of the matmul branch).
#include <vector>

#include "backends/cpu/matmul/matmul_kernels.hpp"
#include "backends/cpu/tensor_rows.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer::cpu {
namespace {

bool supports_mm(const pi_node& n) {
  const auto tt = type_traits(n.src[0].type);
  return tt && tt->dequantizable && is_f32_rows(n.src[1]) && is_f32_rows(n.dst);
}
size_t mm_work(const pi_node& n, int nth) {
  return n.src[0].ne[0] * 4 * nth;
}
void run_mm(const OpContext& ctx) {
  const pi_tensor &w = ctx.node.src[0], &a = ctx.node.src[1], &d = ctx.node.dst;
  const int64_t k = w.ne[0];
  float* row = reinterpret_cast<float*>(ctx.work.data()) + k * ctx.ith;
  const int64_t total = w.ne[1] * a.ne[2] * a.ne[3];
  const Range r = split_range(total, ctx.ith, ctx.nth);
  for (int64_t u = r.begin; u < r.end; ++u) {
    const int64_t n = u % w.ne[1], b2 = (u / w.ne[1]) % a.ne[2], b3 = u / w.ne[1] / a.ne[2];
    dequantize_row(static_cast<GgmlType>(w.type),
                   row_ptr(w, n, b2 / (a.ne[2] / w.ne[2]), b3 / (a.ne[3] / w.ne[3])), row, k);
    for (int64_t m = 0; m < a.ne[1]; ++m) {
      const float* x = row_f32(a, {m, b2, b3});
      float s = 0;
      for (int64_t i = 0; i < k; ++i) s += row[i] * x[i];
      row_f32(d, {m, b2, b3})[n] = s;
    }
  }
}
}  // namespace
const OpImpl kOpMulMat{supports_mm, mm_work, run_mm};
const char* simd_target_name() {
  return "scalar";
}
}  // namespace polyinfer::cpu
