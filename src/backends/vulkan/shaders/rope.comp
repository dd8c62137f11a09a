#version 450
// ROPE: one invocation per (pair or passed-through dim, head, token). θ is built
// as the CPU reference builds it (pos · theta_scale^i by repeated products), so
// both round alike; theta_scale, the YaRN corner dims and mscale come from the host.
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 64) in;

void main() {
  const uint D = t_ne(T_SRC0, 0u), H = t_ne(T_SRC0, 1u), T = t_ne(T_SRC0, 2u);
  const uint idx = wg_index() * 64u + gl_LocalInvocationID.x;
  if (idx >= D * H * T) return;
  const uint d = idx % D, h = (idx / D) % H, tok = idx / (D * H);
  const uint mode = uint(p_i(0u)), n_rot = uint(p_i(1u)), half_rot = n_rot / 2u;
  const uint xrow = t_off(T_SRC0) + h * t_nb(T_SRC0, 1u) + tok * t_nb(T_SRC0, 2u);
  const uint yrow = t_off(T_DST) + h * t_nb(T_DST, 1u) + tok * t_nb(T_DST, 2u);
  if (d >= n_rot) {
    stf(yrow + 4u * d, ldf(T_SRC0, xrow + 4u * d));
    return;
  }
  // Each pair is done by the invocation of its first element.
  uint i, a, b;
  if (mode == 2u) {
    if (d >= half_rot) return;
    i = d; a = d; b = d + half_rot;
  } else {
    if ((d & 1u) != 0u) return;
    i = d / 2u; a = d; b = d + 1u;
  }
  const float theta_scale = p_x(1u), low = p_x(2u), high = p_x(3u), yarn_mscale = p_x(4u);
  const float freq_scale = p_f(1u), ext_factor = p_f(2u);
  float theta_base = float(int(ld32(T_SRC1, t_off(T_SRC1) + 4u * tok)));
  for (uint k = 0u; k < i; ++k) theta_base *= theta_scale;
  const float ff = p_u(0u) != 0u ? ldf(T_SRC2, t_off(T_SRC2) + 4u * i) : 1.0;
  const float extrap = theta_base / ff;
  float theta = freq_scale * extrap;
  float mscale = p_f(3u);
  if (ext_factor != 0.0) {
    const float y = (float(i) - low) / max(0.001, high - low);
    const float mix = (1.0 - min(1.0, max(0.0, y))) * ext_factor;
    theta = theta * (1.0 - mix) + extrap * mix;
    mscale *= yarn_mscale;
  }
  float s, c;
  sincos_acc(theta, s, c);
  c *= mscale;
  s *= mscale;
  const float x0 = ldf(T_SRC0, xrow + 4u * a), x1 = ldf(T_SRC0, xrow + 4u * b);
  stf(yrow + 4u * a, x0 * c - x1 * s);
  stf(yrow + 4u * b, x0 * s + x1 * c);
}
