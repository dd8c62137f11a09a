#version 450
// ROPE: one invocation per (pair or passed-through dim, head, token). θ is built
// as the CPU reference builds it (pos · theta_scale^i by repeated products), so
// both round alike; theta_scale, the YaRN corner dims and mscale come from the host.
// CACHE (vk_fusion.hpp's kRopeCpy) 0: ROPE alone; else also the CPY of the
// output into the KV cache view in slot T_OUT0, of type CACHE - 1 (F32, F16
// or BF16, in whole words or halfwords: the host checks), converted as
// cpy.comp converts (rope_pair.glsl).
#include "common.glsl"
#include "rows.glsl"
#include "rope_pair.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint CACHE = 0u;

// ROPE's output y at element e of the row at yrow, and of the cache row at crow.
void store(uint yrow, uint crow, uint e, float y) {
  stf(yrow + 4u * e, y);
  if (CACHE != 0u) cache_store(0u, CACHE, crow, e, y);
}

void main() {
  const uint D = t_ne(T_SRC0, 0u), H = t_ne(T_SRC0, 1u), T = t_ne(T_SRC0, 2u);
  const uint idx = wg_index() * 64u + gl_LocalInvocationID.x;
  if (idx >= D * H * T) return;
  const uint d = idx % D, h = (idx / D) % H, tok = idx / (D * H);
  const uint mode = uint(p_i(0u)), n_rot = uint(p_i(1u)), half_rot = n_rot / 2u;
  const uint xrow = t_off(T_SRC0) + h * t_nb(T_SRC0, 1u) + tok * t_nb(T_SRC0, 2u);
  const uint yrow = t_off(T_DST) + h * t_nb(T_DST, 1u) + tok * t_nb(T_DST, 2u);
  const uint crow = CACHE != 0u ? t_off(T_OUT0) + h * t_nb(T_OUT0, 1u) + tok * t_nb(T_OUT0, 2u) : 0u;
  if (d >= n_rot) {
    store(yrow, crow, d, ldf(T_SRC0, xrow + 4u * d));
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
  const vec2 cs = rope_cos_sin(i, tok, T_SRC1, T_SRC2);
  const float c = cs.x, s = cs.y;
  const float x0 = ldf(T_SRC0, xrow + 4u * a), x1 = ldf(T_SRC0, xrow + 4u * b);
  store(yrow, crow, a, x0 * c - x1 * s);
  store(yrow, crow, b, x0 * s + x1 * c);
}
