// 8-bit activations for mul_mat_vec_staged.comp on devices with integer dot
// products (VK_KHR_shader_integer_dot_product), for Q4_0, Q4_K, Q5_K and Q6_K
// rows: a unit of 32 weights is dotted with its activation block (q8_block.glsl)
// by 8 packed 4 x 8-bit dot products; the weights' offsets and mins go through
// the sums of the codes. The blocks come either
//  * PREQUANT: from src2, where quantize_q8.comp wrote them once for every
//    product over these activations (vk_fusion.hpp): a workgroup reads 1.5
//    bytes per activation instead of 4 and does not quantize;
//  * else from shared memory, where each workgroup quantizes the segment's
//    activations itself (no dispatch and no barrier of its own).
// Q8_0 keeps float activations: 8-bit codes flipped a model oracle on the CPU
// and CUDA. Needs staged_units.glsl, act4(), acol[] (qcol[] with PREQUANT),
// NCOLS, SEG, WG.
#include "q8_block.glsl"

#ifdef PREQUANT
// src2 as uvec4s: block i of the activations at 3i (codes 0..15), 3i + 1
// (16..31), 3i + 2 (.xy: Q8Block.meta).
layout(std430, set = 0, binding = 1) readonly buffer DataU4 { uvec4 v[]; } ubufs[4];
uint qcol[NCOLS];  // uvec4 index in src2 of each column's first block
#else
const uint SEG_BLOCKS = SEG / 32u;
// Column c's block i: 32 codes at act_codes[2 (c SEG_BLOCKS + i)] and the next;
// Q8Block.meta at act_meta[c SEG_BLOCKS + i].
shared uvec4 act_codes[NCOLS * SEG_BLOCKS * 2u];
shared uvec2 act_meta[NCOLS * SEG_BLOCKS];

// Activations [k0, k0 + len) of every column to codes, a block per invocation.
void quantize_segment(uint k0, uint len) {
  const uint nb = len / 32u;
  for (uint task = gl_LocalInvocationID.x; task < NCOLS * nb; task += WG) {
    const uint c = task / nb, blk = task % nb;
    vec4 x[8];
    [[unroll]] for (uint j = 0u; j < 8u; ++j) x[j] = act4(acol[c] + 4u * (k0 + 32u * blk + 4u * j));
    const Q8Block b = quantize_block(x);
    const uint i = c * SEG_BLOCKS + blk;
    act_codes[2u * i] = b.q0;
    act_codes[2u * i + 1u] = b.q1;
    act_meta[i] = b.meta;
  }
}
#endif

struct Act {
  uvec4 q0, q1;  // codes of values 0..15 and 16..31
  float d;
  int s0, s1;  // Σ codes of values 0..15 and 16..31
  float n2;    // a pending norm's Σ x² over the block (norm_blocks.glsl), else 0
};

Act unpack_act(uvec4 q0, uvec4 q1, uvec3 m) {
  return Act(q0, q1, uintBitsToFloat(m.x), int(m.y << 16) >> 16, int(m.y) >> 16,
             uintBitsToFloat(m.z));
}

// Unit u (one activation block) of column c in the segment at k0.
Act load_act(uint c, uint k0, uint u) {
#ifdef PREQUANT
  const uint i = qcol[c] + 3u * (k0 / 32u + u);
  return unpack_act(ubufs[T_SRC2].v[i], ubufs[T_SRC2].v[i + 1u], ubufs[T_SRC2].v[i + 2u].xyz);
#else
  const uint i = c * SEG_BLOCKS + u;
  return unpack_act(act_codes[2u * i], act_codes[2u * i + 1u], uvec3(act_meta[i], 0u));
#endif
}

// Weight codes are dotted as stored (0..15, 0..31, 0..63: valid signed
// bytes), Σ (q - o) x as Σ q x - o Σ x.
float unit_dot(Unit w, Act a) {
  int s0 = 0, s1 = 0;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    s0 += sdot(w.q0[i], a.q0[i]);
    s1 += sdot(w.q1[i], a.q1[i]);
  }
  const int o = int(OFFSET);
  return a.d * (w.d0 * float(s0 - o * a.s0) + w.d1 * float(s1 - o * a.s1) - w.m * float(a.s0 + a.s1));
}
