#version 450
// MUL_MAT with 1..8 activation columns (decode): a workgroup of 64 computes
// NROWS weight rows against all NCOLS columns. The invocations stride over the
// row in "units" (a whole block or a fixed group of a K-quant super-block), each
// decoding its unit's words once and multiplying it with every column, so a
// weight byte is read once per workgroup. The NROWS x NCOLS partial sums are
// then reduced: subgroupAdd plus one shared step (USE_SUBGROUP), or a shared
// tree. Types without a unit decoder here go element by element through
// dequant.glsl (dq), as does the tail of a plain-type row.
#include "common.glsl"
#include "dequant.glsl"
#include "blocks.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint WTYPE = 0u;
layout(constant_id = 1) const uint NCOLS = 1u;
layout(constant_id = 2) const bool A_VEC4 = false;  // columns 16-byte aligned (vk_graph.cpp)
const uint WG = 64u;
const uint NROWS = 2u;  // vk_ops.cpp's kVecRows

// src1 (F32 activations) seen as vec4s, read so when A_VEC4.
layout(std430, set = 0, binding = 1) readonly buffer DataV4 { vec4 v[]; } vbufs[4];

uint acol[NCOLS];  // byte address of each activation column
float acc[NROWS * NCOLS];

// Activations k..k+3 of column c.
vec4 act4(uint c, uint k) {
  const uint a = acol[c] + 4u * k;
  if (A_VEC4) return vbufs[T_SRC1].v[a >> 4];
  return vec4(ldf(T_SRC1, a), ldf(T_SRC1, a + 4u), ldf(T_SRC1, a + 8u), ldf(T_SRC1, a + 12u));
}

// Elements per unit, 0 for the types that go element by element.
uint unit_size() {
  if (WTYPE == 0u) return 4u;                 // F32
  if (WTYPE == 1u) return 8u;                 // F16
  if (WTYPE == 2u || WTYPE == 8u) return 32u; // Q4_0, Q8_0: one block
  if (WTYPE == 12u || WTYPE == 13u) return 64u; // Q4_K, Q5_K: two sub-blocks sharing bytes
  if (WTYPE == 14u) return 32u;               // Q6_K: 8 positions x 4 groups of a half
  return 0u;
}

void unit_f32(uint r, uint wrow, uint u) {
  const vec4 wv = uintBitsToFloat(ld_16b(wrow + 16u * u));
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) acc[r * NCOLS + c] += dot(wv, act4(c, 4u * u));
}

void unit_f16(uint r, uint wrow, uint u) {
  vec4 w0, w1;
  halves8(ld_16b(wrow + 16u * u), w0, w1);
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c)
    acc[r * NCOLS + c] += dot(w0, act4(c, 8u * u)) + dot(w1, act4(c, 8u * u + 4u));
}

// Q4_0 (18 bytes: d, 16 bytes of nibbles; byte j holds elements j and j + 16).
void unit_q4_0(uint r, uint wrow, uint u) {
  const uint b = wrow + 18u * u, k = 32u * u;
  const float d = half_to_float(ld16(T_SRC0, b));
  const uvec4 q = ld_16b(b + 2u);
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      s += dot(nib_lo(q[j]) - 8.0, act4(c, k + 4u * j));
      s += dot(nib_hi(q[j]) - 8.0, act4(c, k + 16u + 4u * j));
    }
    acc[r * NCOLS + c] += d * s;
  }
}

// Q8_0 (34 bytes: d, 32 signed bytes).
void unit_q8_0(uint r, uint wrow, uint u) {
  const uint b = wrow + 34u * u, k = 32u * u;
  const float d = half_to_float(ld16(T_SRC0, b));
  const uvec4 q0 = ld_16b(b + 2u), q1 = ld_16b(b + 18u);
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      s += dot(bytes_i(q0[j]), act4(c, k + 4u * j));
      s += dot(bytes_i(q1[j]), act4(c, k + 16u + 4u * j));
    }
    acc[r * NCOLS + c] += d * s;
  }
}

// Q4_K (144 bytes) and Q5_K (176): unit p of a super-block is sub-blocks 2p and
// 2p + 1, whose 32 bytes of nibbles are shared (low nibble: 2p, high: 2p + 1);
// Q5_K's fifth bits are bits 2p and 2p + 1 of its 32 qh bytes.
void unit_q45_k(uint r, uint wrow, uint u) {
  const bool q5 = WTYPE == 13u;
  const uint b = wrow + (u / 4u) * (q5 ? 176u : 144u), p = u % 4u, k = 64u * u;
  const uint qs = b + (q5 ? 48u : 16u) + 32u * p;
  const float d = half_to_float(ld16(T_SRC0, b)), dmin = half_to_float(ld16(T_SRC0, b + 2u));
  const uvec3 sc = kq_scales(b);
  const uvec2 sm0 = kq_scale_min(sc, 2u * p), sm1 = kq_scale_min(sc, 2u * p + 1u);
  const float d0 = d * float(sm0.x), m0 = dmin * float(sm0.y);
  const float d1 = d * float(sm1.x), m1 = dmin * float(sm1.y);
  const uvec4 qa = ld_16b(qs), qb = ld_16b(qs + 16u);
  uvec4 ha = uvec4(0u), hb = uvec4(0u);
  if (q5) {
    ha = ld_16b(b + 16u);
    hb = ld_16b(b + 32u);
  }
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
    float s0 = 0.0, s1 = 0.0, a0 = 0.0, a1 = 0.0;
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const uint w = j < 4u ? qa[j] : qb[j - 4u];
      vec4 lo = nib_lo(w), hi = nib_hi(w);
      if (q5) {
        const uint h = j < 4u ? ha[j] : hb[j - 4u];
        lo += bit_x16(h, 2u * p);
        hi += bit_x16(h, 2u * p + 1u);
      }
      const vec4 x0 = act4(c, k + 4u * j), x1 = act4(c, k + 32u + 4u * j);
      s0 += dot(lo, x0);
      s1 += dot(hi, x1);
      a0 += dot(vec4(1.0), x0);
      a1 += dot(vec4(1.0), x1);
    }
    acc[r * NCOLS + c] += d0 * s0 - m0 * a0 + d1 * s1 - m1 * a1;
  }
}

// Q6_K (210 bytes: ql[128], qh[64], int8 scales[16], d). Half h = u / 4 % 2,
// positions l0..l0+7 (l0 = 8 (u % 4)) of each of its four 32-element groups g:
// low nibbles from ql[64h + l] (g = 0, 2) and ql[64h + 32 + l] (g = 1, 3), high
// bits 2g of qh[32h + l]; one scale per 16 elements.
void unit_q6_k(uint r, uint wrow, uint u) {
  const uint b = wrow + (u / 8u) * 210u, h = (u / 4u) % 2u, l0 = 8u * (u % 4u);
  const uint k = (u / 8u) * 256u + 128u * h + l0;
  const float d = half_to_float(ld16(T_SRC0, b + 208u));
  const uvec2 qla = ld_8b(b + 64u * h + l0), qlb = ld_8b(b + 64u * h + 32u + l0);
  const uvec2 qh = ld_8b(b + 128u + 32u * h + l0);
  vec4 wq[8];  // group g, words 0/1 -> wq[2g + i], the 6-bit value minus 32
  [[unroll]] for (uint i = 0u; i < 2u; ++i) {
    wq[i] = nib_lo(qla[i]) + two_x16(qh[i], 0u) - 32.0;
    wq[2u + i] = nib_lo(qlb[i]) + two_x16(qh[i], 2u) - 32.0;
    wq[4u + i] = nib_hi(qla[i]) + two_x16(qh[i], 4u) - 32.0;
    wq[6u + i] = nib_hi(qlb[i]) + two_x16(qh[i], 6u) - 32.0;
  }
  float ds[4];
  [[unroll]] for (uint g = 0u; g < 4u; ++g)
    ds[g] = d * float(ld_i8(T_SRC0, b + 192u + 8u * h + 2u * g + l0 / 16u));
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
    float s = 0.0;
    [[unroll]] for (uint g = 0u; g < 4u; ++g) {
      s += ds[g] * (dot(wq[2u * g], act4(c, k + 32u * g)) + dot(wq[2u * g + 1u], act4(c, k + 32u * g + 4u)));
    }
    acc[r * NCOLS + c] += s;
  }
}

void unit_dot(uint r, uint wrow, uint u) {
  if (WTYPE == 0u) unit_f32(r, wrow, u);
  else if (WTYPE == 1u) unit_f16(r, wrow, u);
  else if (WTYPE == 2u) unit_q4_0(r, wrow, u);
  else if (WTYPE == 8u) unit_q8_0(r, wrow, u);
  else if (WTYPE == 12u || WTYPE == 13u) unit_q45_k(r, wrow, u);
  else if (WTYPE == 14u) unit_q6_k(r, wrow, u);
}

shared float red[NROWS * NCOLS][WG];

// Sum of value i over the workgroup, left in red[i][0].
void reduce_all() {
  const uint t = gl_LocalInvocationID.x;
#ifdef USE_SUBGROUP
  [[unroll]] for (uint i = 0u; i < NROWS * NCOLS; ++i) {
    const float s = subgroupAdd(acc[i]);
    if (gl_SubgroupInvocationID == 0u) red[i][gl_SubgroupID] = s;
  }
  barrier();
  if (t < NROWS * NCOLS) {
    float s = 0.0;
    for (uint g = 0u; g < gl_NumSubgroups; ++g) s += red[t][g];
    red[t][0] = s;
  }
#else
  [[unroll]] for (uint i = 0u; i < NROWS * NCOLS; ++i) red[i][t] = acc[i];
  barrier();
  for (uint s = WG / 2u; s > 0u; s >>= 1) {
    if (t < s) {
      [[unroll]] for (uint i = 0u; i < NROWS * NCOLS; ++i) red[i][t] += red[i][t + s];
    }
    barrier();
  }
#endif
}

void main() {
  const uint N = t_ne(T_DST, 0u), B2 = t_ne(T_DST, 2u);
  const uint row_groups = (N + NROWS - 1u) / NROWS, o = wg_index();
  if (o >= row_groups * B2 * t_ne(T_DST, 3u)) return;  // uniform per workgroup
  const uint n0 = (o % row_groups) * NROWS, b2 = (o / row_groups) % B2, b3 = o / (row_groups * B2);
  const uint r2 = B2 / t_ne(T_SRC0, 2u), r3 = t_ne(T_DST, 3u) / t_ne(T_SRC0, 3u);
  const uint wbase = t_off(T_SRC0) + (b2 / r2) * t_nb(T_SRC0, 2u) + (b3 / r3) * t_nb(T_SRC0, 3u);
  const uint abase = t_off(T_SRC1) + b2 * t_nb(T_SRC1, 2u) + b3 * t_nb(T_SRC1, 3u);
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) acol[c] = abase + c * t_nb(T_SRC1, 1u);
  [[unroll]] for (uint i = 0u; i < NROWS * NCOLS; ++i) acc[i] = 0.0;

  const uint K = t_ne(T_SRC0, 0u), t = gl_LocalInvocationID.x;
  const uint us = unit_size(), units = us == 0u ? 0u : K / us;
  uint wrow[NROWS];
  // A row past N (last workgroup) re-reads row N - 1 and is not stored.
  [[unroll]] for (uint r = 0u; r < NROWS; ++r) wrow[r] = wbase + min(n0 + r, N - 1u) * t_nb(T_SRC0, 1u);
  for (uint u = t; u < units; u += WG) {
    [[unroll]] for (uint r = 0u; r < NROWS; ++r) unit_dot(r, wrow[r], u);
  }
  for (uint k = units * us + t; k < K; k += WG) {
    [[unroll]] for (uint r = 0u; r < NROWS; ++r) {
      const float wv = dq(T_SRC0, WTYPE, wrow[r], k);
      [[unroll]] for (uint c = 0u; c < NCOLS; ++c) acc[r * NCOLS + c] += wv * ldf(T_SRC1, acol[c] + 4u * k);
    }
  }
  reduce_all();
  barrier();
  if (t < NROWS * NCOLS) {
    const uint r = t / NCOLS, c = t % NCOLS;
    if (n0 + r < N) {
      stf(t_off(T_DST) + 4u * (n0 + r) + c * t_nb(T_DST, 1u) + b2 * t_nb(T_DST, 2u) + b3 * t_nb(T_DST, 3u),
          red[t][0]);
    }
  }
}
