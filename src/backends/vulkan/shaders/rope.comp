#version 450
// ROPE: one invocation per (pair or passed-through dim, head, token). θ is built
// as the CPU reference builds it (pos · theta_scale^i by repeated products), so
// both round alike; theta_scale, the YaRN corner dims and mscale come from the host.
// CACHE (vk_fusion.hpp's kRopeCpy) 0: ROPE alone; else also the CPY of the
// output into the KV cache view in slot T_OUT0, of type CACHE - 1 (F32, F16
// or BF16, in whole words or halfwords: the host checks), converted as
// cpy.comp converts.
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint CACHE = 0u;

// The fused dispatch's KV cache view (outs[0], slot T_OUT0).
layout(std430, set = 0, binding = 3) buffer Out { uint w[]; } outs[1];

// Element e of the cache row at byte crow: v converted to the cache's type.
void cache_store(uint crow, uint e, float v) {
  if (CACHE == 1u) {
    outs[0].w[(crow + 4u * e) >> 2] = floatBitsToUint(v);
    return;
  }
  const uint a = crow + 2u * e, sh = (a & 2u) * 8u;
  const uint h = CACHE == 2u ? float_to_half(v) : float_to_bf16(v);
  // The other half of the word may be another invocation's element.
  atomicAnd(outs[0].w[a >> 2], ~(0xFFFFu << sh));
  atomicOr(outs[0].w[a >> 2], h << sh);
}

// ROPE's output y at element e of the row at yrow, and of the cache row at crow.
void store(uint yrow, uint crow, uint e, float y) {
  stf(yrow + 4u * e, y);
  if (CACHE != 0u) cache_store(crow, e, y);
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
  store(yrow, crow, a, x0 * c - x1 * s);
  store(yrow, crow, b, x0 * s + x1 * c);
}
