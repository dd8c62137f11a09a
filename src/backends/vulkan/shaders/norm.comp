#version 450
// RMS_NORM (i-param slot 7 = 0) and NORM (= 1): one workgroup per row.
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 64) in;

void main() {
  const uint r = wg_index();
  if (r >= n_rows(T_SRC0)) return;
  const uint K = t_ne(T_SRC0, 0u), x = row_addr(T_SRC0, r), y = row_addr(T_DST, r);
  const float eps = p_f(0u);
  const bool center = p_u(0u) == 1u;
  float mean = 0.0;
  if (center) {
    float s = 0.0;
    for (uint k = gl_LocalInvocationID.x; k < K; k += 64u) s += ldf(T_SRC0, x + 4u * k);
    mean = wg_sum(s) / float(K);
  }
  float s2 = 0.0;
  for (uint k = gl_LocalInvocationID.x; k < K; k += 64u) {
    const float v = ldf(T_SRC0, x + 4u * k) - mean;
    s2 += v * v;
  }
  const float scale = 1.0 / sqrt(wg_sum(s2) / float(K) + eps);
  for (uint k = gl_LocalInvocationID.x; k < K; k += 64u) {
    stf(y + 4u * k, (ldf(T_SRC0, x + 4u * k) - mean) * scale);
  }
}
