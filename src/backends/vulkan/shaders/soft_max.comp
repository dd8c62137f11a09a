#version 450
// SOFT_MAX: one workgroup per row; z = scale·x + mask, max-subtracted.
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 64) in;

void main() {
  const uint r = wg_index();
  if (r >= n_rows(T_SRC0)) return;
  const uint K = t_ne(T_SRC0, 0u), x = row_addr(T_SRC0, r), y = row_addr(T_DST, r);
  const bool masked = p_u(0u) != 0u;
  const uint mrow = masked ? t_off(T_SRC1) + (r % t_ne(T_SRC0, 1u)) * t_nb(T_SRC1, 1u) : 0u;
  const float scale = p_f(0u);
  float mx = uintBitsToFloat(0xFF800000u);
  for (uint k = gl_LocalInvocationID.x; k < K; k += 64u) {
    const float z = scale * ldf(T_SRC0, x + 4u * k) + (masked ? ldf(T_SRC1, mrow + 4u * k) : 0.0);
    mx = max(mx, z);
  }
  mx = wg_max(mx);
  if (isinf(mx) && mx < 0.0) {  // fully masked row
    for (uint k = gl_LocalInvocationID.x; k < K; k += 64u) stf(y + 4u * k, 0.0);
    return;
  }
  float s = 0.0;
  for (uint k = gl_LocalInvocationID.x; k < K; k += 64u) {
    const float z = scale * ldf(T_SRC0, x + 4u * k) + (masked ? ldf(T_SRC1, mrow + 4u * k) : 0.0);
    s += exp_acc(z - mx);
  }
  const float inv = 1.0 / wg_sum(s);
  // The exponentials again rather than read back from the destination (which
  // no source binding holds; the output may also lie over the input).
  for (uint k = gl_LocalInvocationID.x; k < K; k += 64u) {
    const float z = scale * ldf(T_SRC0, x + 4u * k) + (masked ? ldf(T_SRC1, mrow + 4u * k) : 0.0);
    stf(y + 4u * k, exp_acc(z - mx) * inv);
  }
}
