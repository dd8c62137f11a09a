#version 450
// MUL_MAT with 1..8 activation columns (decode): a workgroup of WG computes
// NROWS weight rows against all NCOLS columns. The invocations stride over the
// rows together in "units" (a quarter block, a fixed group of a K-quant
// super-block, 4 or 8 plain values). Per unit an invocation first loads the raw words of all NROWS
// rows (so their loads are in flight together), then, one column at a time,
// the unit's activations into registers, which every row then dots: a weight
// byte is read once, and the activations once per workgroup, not once per row.
// WG (64..256) is picked by the host so that the row's units fill the
// workgroup. The NROWS x NCOLS partial sums are then reduced: subgroupAdd plus
// one shared step (USE_SUBGROUP), or a shared tree. Types without a unit
// decoder here go element by element through dequant.glsl (dq), as does the
// tail of a plain-type row.
#include "common.glsl"
#include "dequant.glsl"
#include "blocks.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif
layout(local_size_x_id = 3) in;  // WG: vk_ops.cpp's vec_workgroup
layout(constant_id = 0) const uint WTYPE = 0u;
layout(constant_id = 1) const uint NCOLS = 1u;
layout(constant_id = 2) const bool A_VEC4 = false;  // columns 16-byte aligned (vk_graph.cpp)
const uint WG = gl_WorkGroupSize.x;
// Rows per workgroup: vk_ops.cpp's vec_rows. Few columns leave registers for
// more rows, whose loads then overlap.
const uint NROWS = NCOLS <= 2u ? 4u : 2u;

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
  if (WTYPE == 2u || WTYPE == 8u) return 8u; // Q4_0, Q8_0: a quarter block
  if (WTYPE == 12u || WTYPE == 13u) return 64u; // Q4_K, Q5_K: two sub-blocks sharing bytes
  if (WTYPE == 14u) return 32u;               // Q6_K: 8 positions x 4 groups of a half
  return 0u;
}
// The unit's activations as vec4s: x[j] holds elements act_elem(u, j)..+3.
uint act_vec4s() { return unit_size() / 4u; }
uint act_elem(uint u, uint j) {
  // Q4_0: elements 4q..4q+3 and 16+4q..16+4q+3 of block u / 4 (q = u % 4).
  if (WTYPE == 2u) return 32u * (u / 4u) + 4u * (u % 4u) + 16u * j;
  if (WTYPE == 14u) {  // Q6_K: group g = j / 2 of half h, 8 positions from l0
    const uint k = (u / 8u) * 256u + 128u * ((u / 4u) % 2u) + 8u * (u % 4u);
    return k + 32u * (j / 2u) + 4u * (j % 2u);
  }
  return unit_size() * u + 4u * j;
}

// One row's unit as loaded, before decoding: up to 64 bytes of quants (q0..q3)
// and up to four float scales (s). What each type keeps where is below.
struct Unit {
  uvec4 q0, q1, q2, q3;
  vec4 s;
};

// F32: q0 = 4 floats. F16: q0 = 8 halves. Q4_0 (18 bytes: d, 16 bytes of
// nibbles, byte j holding elements j and j + 16) and Q8_0 (34 bytes: d, 32
// signed bytes): quarter q = u % 4 of a block, so that adjacent invocations
// read adjacent bytes of a row (a whole block each read 18 or 34 bytes apart,
// and the activations 128 bytes apart, many cache lines per load): Q4_0 q0.x
// = nibble bytes 4q..4q+3, Q8_0 q0.xy = bytes 8q..8q+7; s.x = d.
// Q4_K (144 bytes) and Q5_K (176): unit p of a super-block is sub-blocks 2p and
// 2p + 1, whose 32 bytes of nibbles are shared (low nibble: 2p, high: 2p + 1):
// q0, q1; Q5_K's fifth bits are bits 2p and 2p + 1 of its 32 qh bytes: q2, q3;
// s = (d0, m0, d1, m1).
// Q6_K (210 bytes: ql[128], qh[64], int8 scales[16], d). Half h = u / 4 % 2,
// positions l0..l0+7 (l0 = 8 (u % 4)) of each of its four 32-element groups g:
// low nibbles from ql[64h + l] (q0.xy; g = 0, 2) and ql[64h + 32 + l] (q0.zw;
// g = 1, 3), high bits 2g of qh[32h + l] (q1.xy); one scale per 16 elements:
// s[g] = d * scale.
Unit load_unit(uint wrow, uint u) {
  Unit w;
  w.q0 = uvec4(0u);
  w.q1 = uvec4(0u);
  w.q2 = uvec4(0u);
  w.q3 = uvec4(0u);
  w.s = vec4(0.0);
  if (WTYPE == 0u || WTYPE == 1u) {
    w.q0 = ld_16b(wrow + 16u * u);
  } else if (WTYPE == 2u) {
    const uint b = wrow + 18u * (u / 4u);
    w.s.x = half_to_float(ld16(T_SRC0, b));
    w.q0.x = ld32(T_SRC0, b + 2u + 4u * (u % 4u));
  } else if (WTYPE == 8u) {
    const uint b = wrow + 34u * (u / 4u);
    w.s.x = half_to_float(ld16(T_SRC0, b));
    w.q0.xy = ld_8b(b + 2u + 8u * (u % 4u));
  } else if (WTYPE == 12u || WTYPE == 13u) {
    const bool q5 = WTYPE == 13u;
    const uint b = wrow + (u / 4u) * (q5 ? 176u : 144u), p = u % 4u;
    const uint qs = b + (q5 ? 48u : 16u) + 32u * p;
    const float d = half_to_float(ld16(T_SRC0, b)), dmin = half_to_float(ld16(T_SRC0, b + 2u));
    const uvec3 sc = kq_scales(b);
    const uvec2 sm0 = kq_scale_min(sc, 2u * p), sm1 = kq_scale_min(sc, 2u * p + 1u);
    w.s = vec4(d * float(sm0.x), dmin * float(sm0.y), d * float(sm1.x), dmin * float(sm1.y));
    w.q0 = ld_16b(qs);
    w.q1 = ld_16b(qs + 16u);
    if (q5) {
      w.q2 = ld_16b(b + 16u);
      w.q3 = ld_16b(b + 32u);
    }
  } else if (WTYPE == 14u) {
    const uint b = wrow + (u / 8u) * 210u, h = (u / 4u) % 2u, l0 = 8u * (u % 4u);
    const float d = half_to_float(ld16(T_SRC0, b + 208u));
    w.q0 = uvec4(ld_8b(b + 64u * h + l0), ld_8b(b + 64u * h + 32u + l0));
    w.q1.xy = ld_8b(b + 128u + 32u * h + l0);
    [[unroll]] for (uint g = 0u; g < 4u; ++g)
      w.s[g] = d * float(ld_i8(T_SRC0, b + 192u + 8u * h + 2u * g + l0 / 16u));
  }
  return w;
}

// The dot product of a loaded unit with its activations x (act_elem order).
float unit_dot(Unit w, uint u, vec4 x[16]) {
  if (WTYPE == 0u) return dot(uintBitsToFloat(w.q0), x[0]);
  if (WTYPE == 1u) {
    vec4 w0, w1;
    halves8(w.q0, w0, w1);
    return dot(w0, x[0]) + dot(w1, x[1]);
  }
  if (WTYPE == 2u) return w.s.x * (dot(nib_lo(w.q0.x) - 8.0, x[0]) + dot(nib_hi(w.q0.x) - 8.0, x[1]));
  if (WTYPE == 8u) return w.s.x * (dot(bytes_i(w.q0.x), x[0]) + dot(bytes_i(w.q0.y), x[1]));
  if (WTYPE == 12u || WTYPE == 13u) {
    const uint p = u % 4u;
    float s0 = 0.0, s1 = 0.0, a0 = 0.0, a1 = 0.0;
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const uint q = j < 4u ? w.q0[j] : w.q1[j - 4u];
      vec4 lo = nib_lo(q), hi = nib_hi(q);
      if (WTYPE == 13u) {
        const uint h = j < 4u ? w.q2[j] : w.q3[j - 4u];
        lo += bit_x16(h, 2u * p);
        hi += bit_x16(h, 2u * p + 1u);
      }
      s0 += dot(lo, x[j]);
      s1 += dot(hi, x[8u + j]);
      a0 += dot(vec4(1.0), x[j]);
      a1 += dot(vec4(1.0), x[8u + j]);
    }
    return w.s.x * s0 - w.s.y * a0 + w.s.z * s1 - w.s.w * a1;
  }
  if (WTYPE == 14u) {
    float s = 0.0;
    [[unroll]] for (uint g = 0u; g < 4u; ++g) {
      float sg = 0.0;
      [[unroll]] for (uint i = 0u; i < 2u; ++i) {
        // ql: groups 0 and 2 from q0.xy, 1 and 3 from q0.zw; qh: bits 2g.
        const uint ql = w.q0[2u * (g % 2u) + i];
        const vec4 lo = g < 2u ? nib_lo(ql) : nib_hi(ql);
        sg += dot(lo + two_x16(w.q1[i], 2u * g) - 32.0, x[2u * g + i]);
      }
      s += w.s[g] * sg;
    }
    return s;
  }
  return 0.0;
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
    Unit w[NROWS];
    [[unroll]] for (uint r = 0u; r < NROWS; ++r) w[r] = load_unit(wrow[r], u);
    [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
      vec4 x[16];
      [[unroll]] for (uint j = 0u; j < 16u; ++j) x[j] = j < act_vec4s() ? act4(c, act_elem(u, j)) : vec4(0.0);
      [[unroll]] for (uint r = 0u; r < NROWS; ++r) acc[r * NCOLS + c] += unit_dot(w[r], u, x);
    }
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
