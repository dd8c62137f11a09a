// What both FLASH_ATTN shaders (flash_attn.comp, flash_attn_vec.comp) share:
// -inf tests and, with USE_CODES, the output of one head stored as the next
// product's 8-bit codes. Needs common.glsl and a shared float qv[] holding
// the head's D output values.

float neg_inf() { return uintBitsToFloat(0xFF800000u); }
bool is_neg_inf(float x) { return isinf(x) && x < 0.0; }

#ifdef USE_CODES
#include "q8_block.glsl"
layout(std430, set = 0, binding = 3) buffer Out { uint w[]; } outs[3];
#ifdef USE_SUBGROUP
#include "q8_lanes.glsl"
#endif

// USE_CODES (vk_fusion.hpp's Unit::writes_codes): the output of head h of
// token t, in qv, as the codes of the next product, which reads the output as
// one row of H D values per token: quantize_q8.comp's blocks (48 bytes), row
// t's block (h D + 32 b) / 32 from the head's block b, to slot T_OUT2. No
// quantize dispatch or barrier between the attention and the product. The
// host checks that D is a multiple of 32.
void store_codes(uint t, uint h, uint H, uint D) {
  barrier();
#ifdef USE_SUBGROUP
  // Eight lanes per block (q8_lanes.glsl): D / 4 lanes, a multiple of 8.
  const uint g = lane_index(), j = g % 8u;
  if (g >= D / 4u) return;
  const uint o = (t_off(T_OUT2) >> 2) + 12u * (t * H + h) * (D / 32u);
  const uvec2 w =
      quantize_lanes(vec4(qv[4u * g], qv[4u * g + 1u], qv[4u * g + 2u], qv[4u * g + 3u]), j);
  outs[2].w[o + 12u * (g / 8u) + j] = w.x;
  if (j < 4u) outs[2].w[o + 12u * (g / 8u) + 8u + j] = w.y;
#else
  const uint b = gl_LocalInvocationID.x;
  if (b >= D / 32u) return;
  vec4 x[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j)
    x[j] = vec4(qv[32u * b + 4u * j], qv[32u * b + 4u * j + 1u], qv[32u * b + 4u * j + 2u],
                qv[32u * b + 4u * j + 3u]);
  const Q8Block q = quantize_block(x);
  const uint a = (t_off(T_OUT2) >> 2) + 12u * ((t * H + h) * (D / 32u) + b);
  [[unroll]] for (uint j = 0u; j < 12u; ++j) outs[2].w[a + j] = q8_word(q, j);
#endif
}
#endif
