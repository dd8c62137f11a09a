#version 450
// ARGMAX: one workgroup per row; the first index of the maximum.
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 64) in;

shared float best_v[64];
shared uint best_i[64];

void main() {
  const uint r = wg_index();
  if (r >= n_rows(T_SRC0)) return;
  const uint K = t_ne(T_SRC0, 0u), x = row_addr(T_SRC0, r), lane = gl_LocalInvocationID.x;
  float bv = uintBitsToFloat(0xFF800000u);
  uint bi = 0xFFFFFFFFu;
  for (uint k = lane; k < K; k += 64u) {
    const float v = ldf(T_SRC0, x + 4u * k);
    if (bi == 0xFFFFFFFFu || v > bv) { bv = v; bi = k; }
  }
  best_v[lane] = bv;
  best_i[lane] = bi;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (lane < s) {
      const float ov = best_v[lane + s];
      const uint oi = best_i[lane + s];
      if (oi != 0xFFFFFFFFu &&
          (best_i[lane] == 0xFFFFFFFFu || ov > best_v[lane] || (ov == best_v[lane] && oi < best_i[lane]))) {
        best_v[lane] = ov;
        best_i[lane] = oi;
      }
    }
    barrier();
  }
  if (lane == 0u) sti(t_off(T_DST) + 4u * r, int(best_i[0]));
}
