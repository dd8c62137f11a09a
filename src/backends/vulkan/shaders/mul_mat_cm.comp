#version 450
// MUL_MAT with more than 8 activation columns (prefill) on tensor cores:
// VK_NV_cooperative_matrix, 16 x 16 x 16 products of F16 matrices summed in
// float32 (the device must list that shape for subgroup scope, and have
// subgroups of 32: vk_coopmat.cpp). A workgroup of 256 (8 subgroups) computes
// a 128 (weight rows n) x BN (columns m; CM_BN = 64 or 128) output tile; per
// step of 32 along K it decodes the weight tile to F16 in shared memory and
// converts the activation tile beside it (each weight read and decoded once
// per BN columns, as mul_mat_mm.comp does), then subgroup s multiplies rows
// 32·(s % 4) .. + 32 by columns BN/2·(s / 4) .. + BN/2 as 2 x BN/32
// accumulators. Each step's loads are issued before the previous step's
// products and decoded into shared memory after them (load8 / unpack8,
// gemm_stage.glsl), so the products run while the loads are in flight.
// Weights and activations are rounded to F16 once (the
// tolerance of F16 weights: docs/TESTING.md); F32 and BF16 weights keep
// mul_mat_mm.comp.
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"
#include "dequant.glsl"
#include "blocks.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint WTYPE = 0u;
layout(constant_id = 2) const bool A_VEC4 = false;  // columns 16-byte aligned (vk_graph_plan.cpp)
#include "gemm_stage.glsl"

#ifndef CM_BN
#define CM_BN 64
#endif
const uint BM = 128u, BN = CM_BN, BK = 32u;
const uint NA = BN / 32u;  // accumulators per subgroup along the columns
// Shared rows of BK halves padded by 8 (16 bytes): the cooperative loads
// start at multiples of 16 bytes, and adjacent rows fall in other banks.
const uint SW = BK + 8u;
const uint kSubgroup = 3u;  // SPIR-V scope Subgroup
shared float16_t ws[BM * SW];  // weights, [row][k]
shared float16_t as[BN * SW];  // activations, [column][k]
shared float cs[8u * 256u];    // one 16 x 16 result per subgroup on its way out
// (vk_coopmat.hpp's kCoopmatSharedBytes is these three arrays' size at BN = 128.)

// Four invocations per row (or column), 8 consecutive k each, so that a
// subgroup's loads fall on 8 rows and not 32: 64 rows (columns) per pass.
const uint TPR = BK / 8u, RP = 256u / TPR, WP = BM / RP, AP = BN / RP;

// F16 of x, saturated at the largest finite half: an activation or weight past
// 65504 would otherwise turn the tile's sums into inf or NaN. (OpFConvert's
// rounding is the driver's: round to nearest even on NVIDIA, whose rounding
// the F16 tolerances of docs/TESTING.md assume.)
float16_t h16(float x) { return float16_t(clamp(x, -65504.0, 65504.0)); }

void put8(uint at, vec4 lo, vec4 hi) {
  [[unroll]] for (uint e = 0u; e < 4u; ++e) {
    ws[at + e] = h16(lo[e]);
    ws[at + 4u + e] = h16(hi[e]);
  }
}

// One step's staging, loaded a step ahead: invocation t's WP weight pieces
// as their blocks' words (Raw8), and its AP activation pieces.
Raw8 wraw[WP];
vec4 alo[AP], ahi[AP];

void load_step(uint k, uint K, uint wrow[WP], uint acol[AP], bool col_in[AP]) {
  [[unroll]] for (uint p = 0u; p < WP; ++p)
    if (k + 8u <= K) wraw[p] = load8(wrow[p], k);  // a ragged end is read when stored
  [[unroll]] for (uint p = 0u; p < AP; ++p) acts8(acol[p], col_in[p], k, K, alo[p], ahi[p]);
}

// The loaded step into shared memory: F16 rows as the stored halves, the rest
// decoded (unpack8), a ragged end of a row element by element (zeros past K).
void store_step(uint k, uint K, uint at0, uint wrow[WP]) {
  [[unroll]] for (uint p = 0u; p < WP; ++p) {
    const uint at = at0 + RP * p * SW;
    vec4 lo, hi;
    if (k + 8u > K) {
      weights8(wrow[p], k, K, lo, hi);
      put8(at, lo, hi);
    } else if (WTYPE == 1u) {
      [[unroll]] for (uint e = 0u; e < 4u; ++e) {
        const f16vec2 h = unpackFloat2x16(wraw[p].a[e]);
        ws[at + 2u * e] = h.x;
        ws[at + 2u * e + 1u] = h.y;
      }
    } else {
      unpack8(wraw[p], k, lo, hi);
      put8(at, lo, hi);
    }
  }
  [[unroll]] for (uint p = 0u; p < AP; ++p) {
    const uint at = at0 + RP * p * SW;
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      as[at + e] = h16(alo[p][e]);
      as[at + 4u + e] = h16(ahi[p][e]);
    }
  }
}

void main() {
  GemmTile g;
  if (!gemm_tile(BM, BN, g)) return;  // uniform per workgroup
  const uint N = t_ne(T_DST, 0u), M = t_ne(T_DST, 1u), K = t_ne(T_SRC0, 0u);
  const uint t = gl_LocalInvocationID.x;

  // What this invocation stages: k .. k + 7 (k = 8 · (t % TPR)) of weight rows
  // n0 + t/TPR + RP·p (clamped: rows past N are computed from row N - 1 and
  // not stored) and of columns m0 + t/TPR + RP·p.
  const uint kt = 8u * (t % TPR), rt = t / TPR;
  uint wrow[WP];
  [[unroll]] for (uint p = 0u; p < WP; ++p) wrow[p] = g.wbase + min(g.n0 + rt + RP * p, N - 1u) * t_nb(T_SRC0, 1u);
  uint acol[AP];
  bool col_in[AP];
  [[unroll]] for (uint p = 0u; p < AP; ++p) {
    acol[p] = g.abase + (g.m0 + rt + RP * p) * t_nb(T_SRC1, 1u);
    col_in[p] = g.m0 + rt + RP * p < M;
  }

  const uint s = gl_SubgroupID, sn = 32u * (s % 4u), sm = (BN / 2u) * (s / 4u);
  fcoopmatNV<32, kSubgroup, 16, 16> acc[2][NA];
  [[unroll]] for (uint i = 0u; i < 2u; ++i)
    [[unroll]] for (uint j = 0u; j < NA; ++j) acc[i][j] = fcoopmatNV<32, kSubgroup, 16, 16>(0.0);
  // Software pipelining: step k0 + BK's loads are issued before step k0's
  // products and stored to shared memory after them, so that the products
  // run while the loads are in flight.
  const uint at0 = rt * SW + kt;
  load_step(kt, K, wrow, acol, col_in);
  store_step(kt, K, at0, wrow);
  barrier();
  for (uint k0 = 0u; k0 < K; k0 += BK) {
    const bool next = k0 + BK < K;  // uniform
    if (next) load_step(k0 + BK + kt, K, wrow, acol, col_in);
    [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
      fcoopmatNV<16, kSubgroup, 16, 16> a[2], b[NA];
      [[unroll]] for (uint i = 0u; i < 2u; ++i) coopMatLoadNV(a[i], ws, (sn + 16u * i) * SW + kk, SW, false);
      // as[column][k] is the (k x column) matrix in column-major order.
      [[unroll]] for (uint j = 0u; j < NA; ++j) coopMatLoadNV(b[j], as, (sm + 16u * j) * SW + kk, SW, true);
      [[unroll]] for (uint i = 0u; i < 2u; ++i)
        [[unroll]] for (uint j = 0u; j < NA; ++j) acc[i][j] = coopMatMulAddNV(a[i], b[j], acc[i][j]);
    }
    barrier();  // every subgroup has read the step's tiles
    if (next) {
      store_step(k0 + BK + kt, K, at0, wrow);
      barrier();
    }
  }

  // Each result through the subgroup's 16 x 16 of shared memory (column-major:
  // n fastest), lane l writing 8 consecutive rows of column l / 2.
  const uint l = gl_SubgroupInvocationID, cn = (l % 2u) * 8u, cm = l / 2u;
  [[unroll]] for (uint i = 0u; i < 2u; ++i) {
    [[unroll]] for (uint j = 0u; j < NA; ++j) {
      coopMatStoreNV(acc[i][j], cs, s * 256u, 16u, true);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      const uint m = g.m0 + sm + 16u * j + cm, n = g.n0 + sn + 16u * i + cn;
      if (m < M) {
        for (uint e = 0u; e < 8u && n + e < N; ++e)
          stf(g.dbase + 4u * (n + e) + m * t_nb(T_DST, 1u), cs[s * 256u + cm * 16u + cn + e]);
      }
      subgroupBarrier();
    }
  }
}
