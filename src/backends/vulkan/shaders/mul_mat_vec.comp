#version 450
// MUL_MAT with 1..8 activation columns (decode) for the weight types that
// mul_mat_vec_staged.comp does not take: F32, BF16, Q4_1, Q5_0, Q5_1, Q2_K,
// Q3_K, and F16 rows whose length is not a multiple of 8. A workgroup of WG
// computes NROWS weight rows against all NCOLS columns. F32 rows go in units
// of 4 values: per unit an invocation first loads the words of all NROWS rows
// (so their loads are in flight together), then per column the unit's
// activations, which every row dots: a weight is read once, the activations
// once per workgroup. The other types, and the ragged end of a plain row, go
// element by element through dequant.glsl (dq). The NROWS x NCOLS sums are
// reduced by reduce.glsl.
#include "common.glsl"
#include "dequant.glsl"
#include "blocks.glsl"
layout(local_size_x_id = 3) in;  // WG: vk_matvec_plan.cpp
layout(constant_id = 0) const uint WTYPE = 0u;
layout(constant_id = 1) const uint NCOLS = 1u;
layout(constant_id = 2) const bool A_VEC4 = false;  // columns 16-byte aligned (vk_graph_plan.cpp)
const uint WG = gl_WorkGroupSize.x;
// Rows per workgroup: vk_matvec_plan.cpp's element_rows. Few columns leave
// registers for more rows, whose loads then overlap.
const uint NROWS = NCOLS <= 2u ? 4u : 2u;
const uint NSUMS = NROWS * NCOLS;

// src1 (F32 activations) seen as vec4s, read so when A_VEC4.
layout(std430, set = 0, binding = 1) readonly buffer DataV4 { vec4 v[]; } vbufs[4];

uint acol[NCOLS];  // byte address of each activation column
float acc[NSUMS];

#include "reduce.glsl"

// Activations k..k+3 of column c.
vec4 act4(uint c, uint k) {
  const uint a = acol[c] + 4u * k;
  if (A_VEC4) return vbufs[T_SRC1].v[a >> 4];
  return vec4(ldf(T_SRC1, a), ldf(T_SRC1, a + 4u), ldf(T_SRC1, a + 8u), ldf(T_SRC1, a + 12u));
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
  [[unroll]] for (uint i = 0u; i < NSUMS; ++i) acc[i] = 0.0;

  const uint K = t_ne(T_SRC0, 0u), t = gl_LocalInvocationID.x;
  const uint units = WTYPE == 0u ? K / 4u : 0u;  // F32 units of 4 values
  uint wrow[NROWS];
  // A row past N (last workgroup) re-reads row N - 1 and is not stored.
  [[unroll]] for (uint r = 0u; r < NROWS; ++r) wrow[r] = wbase + min(n0 + r, N - 1u) * t_nb(T_SRC0, 1u);
  for (uint u = t; u < units; u += WG) {
    vec4 w[NROWS];
    [[unroll]] for (uint r = 0u; r < NROWS; ++r) w[r] = uintBitsToFloat(ld_16b(wrow[r] + 16u * u));
    [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
      const vec4 x = act4(c, 4u * u);
      [[unroll]] for (uint r = 0u; r < NROWS; ++r) acc[r * NCOLS + c] += dot(w[r], x);
    }
  }
  for (uint k = 4u * units + t; k < K; k += WG) {
    [[unroll]] for (uint r = 0u; r < NROWS; ++r) {
      const float wv = dq(T_SRC0, WTYPE, wrow[r], k);
      [[unroll]] for (uint c = 0u; c < NCOLS; ++c) acc[r * NCOLS + c] += wv * ldf(T_SRC1, acol[c] + 4u * k);
    }
  }
  reduce_sums();
  if (t < NSUMS) {
    const uint r = t / NCOLS, c = t % NCOLS;
    if (n0 + r < N) {
      stf(t_off(T_DST) + 4u * (n0 + r) + c * t_nb(T_DST, 1u) + b2 * t_nb(T_DST, 2u) + b3 * t_nb(T_DST, 3u),
          red[t][0]);
    }
  }
}
