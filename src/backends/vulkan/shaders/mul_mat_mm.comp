#version 450
// MUL_MAT with more than 8 activation columns (prefill): a tiled GEMM. A
// workgroup of 256 computes a 64 (weight rows) x 64 (columns) output tile; per
// step of 32 along K it decodes the weight tile to float in shared memory
// (each weight read and decoded once per 64 columns) and stages the activation
// tile beside it, then every invocation accumulates a 4 x 4 register tile:
// rows tx + 16i (adjacent invocations, adjacent output addresses) and
// columns ty + 16j. Float32 throughout.
#include "common.glsl"
#include "dequant.glsl"
#include "blocks.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint WTYPE = 0u;
layout(constant_id = 2) const bool A_VEC4 = false;  // columns 16-byte aligned (vk_graph.cpp)
const uint BM = 64u, BN = 64u, BK = 32u;

layout(std430, set = 0, binding = 1) readonly buffer DataV4 { vec4 v[]; } vbufs[4];

shared float ws[BK][BM];  // weights, [k][row]
shared float as[BK][BN];  // activations, [k][column]

// Elements k..k+7 (k a multiple of 8, k + 8 <= K) of the weight row at byte
// address row, decoded from their block as whole words.
void decode8(uint row, uint k, out vec4 lo, out vec4 hi) {
  if (WTYPE == 0u) {  // F32
    lo = uintBitsToFloat(ld_16b(row + 4u * k));
    hi = uintBitsToFloat(ld_16b(row + 4u * k + 16u));
  } else if (WTYPE == 1u) {  // F16
    halves8(ld_16b(row + 2u * k), lo, hi);
  } else if (WTYPE == 2u) {  // Q4_0: bytes 0..15 hold elements j (low) and j + 16 (high)
    const uint b = row + (k / 32u) * 18u, j = k % 32u;
    const float d = half_to_float(ld16(T_SRC0, b));
    const uvec2 q = ld_8b(b + 2u + j % 16u);
    lo = d * ((j < 16u ? nib_lo(q.x) : nib_hi(q.x)) - 8.0);
    hi = d * ((j < 16u ? nib_lo(q.y) : nib_hi(q.y)) - 8.0);
  } else if (WTYPE == 8u) {  // Q8_0
    const uint b = row + (k / 32u) * 34u;
    const float d = half_to_float(ld16(T_SRC0, b));
    const uvec2 q = ld_8b(b + 2u + k % 32u);
    lo = d * bytes_i(q.x);
    hi = d * bytes_i(q.y);
  } else if (WTYPE == 12u || WTYPE == 13u) {  // Q4_K, Q5_K: sub-block j = e / 32
    const bool q5 = WTYPE == 13u;
    const uint b = row + (k / 256u) * (q5 ? 176u : 144u), e = k % 256u, j = e / 32u;
    const uvec2 sm = kq_scale_min(kq_scales(b), j);
    const float dl = half_to_float(ld16(T_SRC0, b)) * float(sm.x);
    const float ml = half_to_float(ld16(T_SRC0, b + 2u)) * float(sm.y);
    const uvec2 q = ld_8b(b + (q5 ? 48u : 16u) + (e / 64u) * 32u + e % 32u);
    vec4 ql = (j % 2u) == 0u ? nib_lo(q.x) : nib_hi(q.x);
    vec4 qh = (j % 2u) == 0u ? nib_lo(q.y) : nib_hi(q.y);
    if (q5) {
      const uvec2 h = ld_8b(b + 16u + e % 32u);
      ql += bit_x16(h.x, j);
      qh += bit_x16(h.y, j);
    }
    lo = dl * ql - ml;
    hi = dl * qh - ml;
  } else if (WTYPE == 14u) {  // Q6_K: half h, group g of 32, position l
    const uint b = row + (k / 256u) * 210u, e = k % 256u, h = e / 128u, g = (e % 128u) / 32u;
    const uint l = e % 32u;
    const float dl = half_to_float(ld16(T_SRC0, b + 208u)) * float(ld_i8(T_SRC0, b + 192u + e / 16u));
    const uvec2 ql = ld_8b(b + 64u * h + 32u * (g % 2u) + l);
    const uvec2 qh = ld_8b(b + 128u + 32u * h + l);
    lo = dl * ((g < 2u ? nib_lo(ql.x) : nib_hi(ql.x)) + two_x16(qh.x, 2u * g) - 32.0);
    hi = dl * ((g < 2u ? nib_lo(ql.y) : nib_hi(ql.y)) + two_x16(qh.y, 2u * g) - 32.0);
  } else {
    lo = vec4(dq(T_SRC0, WTYPE, row, k), dq(T_SRC0, WTYPE, row, k + 1u), dq(T_SRC0, WTYPE, row, k + 2u),
              dq(T_SRC0, WTYPE, row, k + 3u));
    hi = vec4(dq(T_SRC0, WTYPE, row, k + 4u), dq(T_SRC0, WTYPE, row, k + 5u), dq(T_SRC0, WTYPE, row, k + 6u),
              dq(T_SRC0, WTYPE, row, k + 7u));
  }
}

// Invocation t stages 8 consecutive k of weight row t / 4 and of column t / 4.
void stage(uint k0, uint K, uint wrow, uint acol, bool col_in) {
  const uint t = gl_LocalInvocationID.x, r = t / 4u, kq = (t % 4u) * 8u, k = k0 + kq;
  vec4 w0 = vec4(0.0), w1 = vec4(0.0), a0 = vec4(0.0), a1 = vec4(0.0);
  if (k + 8u <= K) {
    decode8(wrow, k, w0, w1);
    if (col_in && A_VEC4) {
      a0 = vbufs[T_SRC1].v[(acol + 4u * k) >> 4];
      a1 = vbufs[T_SRC1].v[(acol + 4u * k + 16u) >> 4];
    } else if (col_in) {
      for (uint e = 0u; e < 4u; ++e) {
        a0[e] = ldf(T_SRC1, acol + 4u * (k + e));
        a1[e] = ldf(T_SRC1, acol + 4u * (k + 4u + e));
      }
    }
  } else {  // the ragged end of a plain-type row: element by element, zeros past K
    for (uint e = 0u; e < 8u; ++e) {
      if (k + e >= K) break;
      const float wv = dq(T_SRC0, WTYPE, wrow, k + e), av = col_in ? ldf(T_SRC1, acol + 4u * (k + e)) : 0.0;
      if (e < 4u) { w0[e] = wv; a0[e] = av; } else { w1[e - 4u] = wv; a1[e - 4u] = av; }
    }
  }
  for (uint e = 0u; e < 4u; ++e) {
    ws[kq + e][r] = w0[e];
    ws[kq + 4u + e][r] = w1[e];
    as[kq + e][r] = a0[e];
    as[kq + 4u + e][r] = a1[e];
  }
}

void main() {
  const uint N = t_ne(T_DST, 0u), M = t_ne(T_DST, 1u), B2 = t_ne(T_DST, 2u);
  const uint tiles_n = (N + BM - 1u) / BM, tiles_m = (M + BN - 1u) / BN, o = wg_index();
  if (o >= tiles_n * tiles_m * B2 * t_ne(T_DST, 3u)) return;  // uniform per workgroup
  const uint n0 = (o % tiles_n) * BM, m0 = ((o / tiles_n) % tiles_m) * BN;
  const uint b2 = (o / (tiles_n * tiles_m)) % B2, b3 = o / (tiles_n * tiles_m * B2);
  const uint r2 = B2 / t_ne(T_SRC0, 2u), r3 = t_ne(T_DST, 3u) / t_ne(T_SRC0, 3u);
  const uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
  const uint K = t_ne(T_SRC0, 0u);

  // What this invocation stages: weight row n0 + t/4 (clamped: rows past N are
  // computed from row N - 1 and not stored) and column m0 + t/4.
  const uint wrow = t_off(T_SRC0) + min(n0 + t / 4u, N - 1u) * t_nb(T_SRC0, 1u) +
                    (b2 / r2) * t_nb(T_SRC0, 2u) + (b3 / r3) * t_nb(T_SRC0, 3u);
  const uint abase = t_off(T_SRC1) + b2 * t_nb(T_SRC1, 2u) + b3 * t_nb(T_SRC1, 3u);
  const uint acol = abase + (m0 + t / 4u) * t_nb(T_SRC1, 1u);
  const bool col_in = m0 + t / 4u < M;

  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0u; k0 < K; k0 += BK) {
    stage(k0, K, wrow, acol, col_in);
    barrier();
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      float wv[4], av[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) wv[i] = ws[kk][tx + 16u * i];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) av[j] = as[kk][ty + 16u * j];
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += wv[i] * av[j];
    }
    barrier();
  }
  const uint dbase = t_off(T_DST) + b2 * t_nb(T_DST, 2u) + b3 * t_nb(T_DST, 3u);
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint m = m0 + ty + 16u * j;
    if (m >= M) continue;
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      const uint n = n0 + tx + 16u * i;
      if (n < N) stf(dbase + 4u * n + m * t_nb(T_DST, 1u), acc[i][j]);
    }
  }
}
