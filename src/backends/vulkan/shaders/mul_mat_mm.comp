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
layout(constant_id = 2) const bool A_VEC4 = false;  // columns 16-byte aligned (vk_graph_plan.cpp)
const uint BM = 64u, BN = 64u, BK = 32u;
#include "gemm_stage.glsl"

shared float ws[BK][BM];  // weights, [k][row]
shared float as[BK][BN];  // activations, [k][column]

// Invocation t stages 8 consecutive k of weight row t / 4 and of column t / 4.
void stage(uint k0, uint K, uint wrow, uint acol, bool col_in) {
  const uint t = gl_LocalInvocationID.x, r = t / 4u, kq = (t % 4u) * 8u, k = k0 + kq;
  vec4 w0, w1, a0, a1;
  weights8(wrow, k, K, w0, w1);
  acts8(acol, col_in, k, K, a0, a1);
  for (uint e = 0u; e < 4u; ++e) {
    ws[kq + e][r] = w0[e];
    ws[kq + 4u + e][r] = w1[e];
    as[kq + e][r] = a0[e];
    as[kq + 4u + e][r] = a1[e];
  }
}

void main() {
  GemmTile g;
  if (!gemm_tile(BM, BN, g)) return;  // uniform per workgroup
  const uint N = t_ne(T_DST, 0u), M = t_ne(T_DST, 1u), K = t_ne(T_SRC0, 0u);
  const uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;

  // What this invocation stages: weight row n0 + t/4 (clamped: rows past N are
  // computed from row N - 1 and not stored) and column m0 + t/4.
  const uint wrow = g.wbase + min(g.n0 + t / 4u, N - 1u) * t_nb(T_SRC0, 1u);
  const uint acol = g.abase + (g.m0 + t / 4u) * t_nb(T_SRC1, 1u);
  const bool col_in = g.m0 + t / 4u < M;

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
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint m = g.m0 + ty + 16u * j;
    if (m >= M) continue;
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      const uint n = g.n0 + tx + 16u * i;
      if (n < N) stf(g.dbase + 4u * n + m * t_nb(T_DST, 1u), acc[i][j]);
    }
  }
}
