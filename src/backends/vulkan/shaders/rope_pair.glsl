// What shaders/rope.comp and the products that fold a ROPE and a KV cache
// write into their epilogue (mul_mat_vec_direct.comp; vk_fusion.hpp's
// Unit::rope, Unit::cache) share: the rotation of one pair and the stores of
// its output. Needs common.glsl and the ROPE node's parameter words.

// Binding 3: a fused dispatch's further outputs (slots T_OUT0..T_OUT2).
layout(std430, set = 0, binding = 3) buffer Out { uint w[]; } outs[3];

// ROPE's cos and sin of pair i of token tok, both times mscale: θ = pos ·
// theta_scale^i built by repeated products as the CPU reference builds it (so
// both round alike), divided by the pair's freq factor, YaRN's ramp between
// the corner dims; theta_scale, the corner dims and mscale come from the host
// (vk_ops.cpp's rope_extra). Positions (I32) in slot pos_t, freq factors (F32)
// in slot ff_t when p_u(0) is set.
vec2 rope_cos_sin(uint i, uint tok, uint pos_t, uint ff_t) {
  const float theta_scale = p_x(1u), low = p_x(2u), high = p_x(3u), yarn_mscale = p_x(4u);
  const float freq_scale = p_f(1u), ext_factor = p_f(2u);
  float theta_base = float(int(ld32(pos_t, t_off(pos_t) + 4u * tok)));
  for (uint k = 0u; k < i; ++k) theta_base *= theta_scale;
  const float ff = p_u(0u) != 0u ? ldf(ff_t, t_off(ff_t) + 4u * i) : 1.0;
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
  return vec2(c * mscale, s * mscale);
}

// Element e of the KV cache row at byte crow of output o: v converted to the
// cache's type `cache` (kRopeCpy's CACHE: 1 F32, 2 F16, 3 BF16) as cpy.comp
// converts.
void cache_store(uint o, uint cache, uint crow, uint e, float v) {
  if (cache == 1u) {
    outs[o].w[(crow + 4u * e) >> 2] = floatBitsToUint(v);
    return;
  }
  const uint a = crow + 2u * e, sh = (a & 2u) * 8u;
  const uint h = cache == 2u ? float_to_half(v) : float_to_bf16(v);
  // The other half of the word may be another invocation's element.
  atomicAnd(outs[o].w[a >> 2], ~(0xFFFFu << sh));
  atomicOr(outs[o].w[a >> 2], h << sh);
}

