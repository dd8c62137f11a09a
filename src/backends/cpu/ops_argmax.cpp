// ARGMAX over dim 0: the first index of the maximum (greedy sampling on the device).
#include "backends/cpu/tensor_rows.hpp"

namespace polyinfer::cpu {
namespace {

bool supports_argmax(const pi_node& n) {
  return is_f32_rows(n.src[0]) && n.src[0].ne[2] == 1 && n.src[0].ne[3] == 1 &&
         n.dst.type == kTypeI32 && n.dst.ne[0] == n.src[0].ne[1] && n.dst.nb[0] == 4;
}

size_t no_work(const pi_node&, int) {
  return 0;
}

void run_argmax(const OpContext& ctx) {
  const pi_tensor& x = ctx.node.src[0];
  int32_t* out = reinterpret_cast<int32_t*>(tensor_data(ctx.node.dst));
  const Range rows = split_range(x.ne[1], ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const float* v = row_f32(x, {r, 0, 0});
    int64_t best = 0;
    for (int64_t i = 1; i < x.ne[0]; ++i) {
      if (v[i] > v[best]) best = i;
    }
    out[r] = static_cast<int32_t>(best);
  }
}

}  // namespace

const OpImpl kOpArgmax{supports_argmax, no_work, run_argmax};

}  // namespace polyinfer::cpu
