#version 450
// MUL_MAT of F16 rows with 1..8 activation columns (decode), one batch, rows
// of a multiple of 8 values that start 16-byte aligned (vk_matvec_plan.cpp
// checks; mul_mat_vec_staged.comp takes other F16 rows). A row is K / 8
// pieces of 16 bytes (8 halves). A workgroup of WG computes ROWS rows;
// invocation i takes pieces i, i + WG, ... of each row, PASS per pass: a pass
// first loads its PASS x ROWS pieces, all before any is used, then per column
// the pass's 8 activations per piece, which every row dots. No staging
// through shared memory and no barrier until the sums are reduced: the
// staged kernel took llama-8b's 4096 x 57344 F16 product at 161 GB/s on the
// H200 (BENCHMARKS.md, session 27), its rows of 1,024-value segments through
// shared memory and two barriers per segment.
#include "common.glsl"
layout(local_size_x_id = 3) in;
layout(constant_id = 1) const uint NCOLS = 1u;
layout(constant_id = 2) const bool A_VEC4 = false;  // columns 16-byte aligned (vk_graph_plan.cpp)
layout(constant_id = 4) const uint ROWS = 2u;
layout(constant_id = 5) const uint PASS = 2u;  // pieces of each row per invocation and pass
const uint WG = gl_WorkGroupSize.x;
const uint NSUMS = ROWS * NCOLS;

// src0 as 16-byte pieces.
layout(std430, set = 0, binding = 1) readonly buffer Pieces { uvec4 v[]; } pieces[4];

float acc[NSUMS];

#include "reduce.glsl"
#include "act_vec4.glsl"

// The 8 halves of a piece against 8 activations. unpackHalf2x16 widens
// exactly (every half is a float), unlike the narrowing packHalf2x16 that
// common.glsl's float_to_half replaces; it is the hardware's conversion, where
// half_to_float's bit operations would cost more than the load's bandwidth allows.
float dot8(uvec4 w, vec4 a0, vec4 a1) {
  const vec2 x = unpackHalf2x16(w.x), y = unpackHalf2x16(w.y);
  const vec2 z = unpackHalf2x16(w.z), u = unpackHalf2x16(w.w);
  return dot(vec4(x, y), a0) + dot(vec4(z, u), a1);
}

void main() {
  const uint N = t_ne(T_DST, 0u), row_groups = (N + ROWS - 1u) / ROWS, o = wg_index();
  if (o >= row_groups) return;  // uniform per workgroup
  const uint n0 = o * ROWS, valid = min(ROWS, N - n0);
  const uint npieces = t_ne(T_SRC0, 0u) / 8u, stride16 = t_nb(T_SRC0, 1u) >> 4;
  uint row16[ROWS];  // clamped: the last workgroup's rows past N load row N - 1
  [[unroll]] for (uint r = 0u; r < ROWS; ++r)
    row16[r] = (t_off(T_SRC0) >> 4) + (n0 + min(r, valid - 1u)) * stride16;
  uint acol[NCOLS];
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) acol[c] = t_off(T_SRC1) + c * t_nb(T_SRC1, 1u);
  [[unroll]] for (uint i = 0u; i < NSUMS; ++i) acc[i] = 0.0;

  const uint lane = gl_LocalInvocationID.x;
  for (uint p0 = 0u; p0 < npieces; p0 += PASS * WG) {
    // Loads at a clamped piece, so that none waits on a branch.
    uvec4 w[PASS][ROWS];
    [[unroll]] for (uint j = 0u; j < PASS; ++j) {
      const uint p = min(p0 + lane + j * WG, npieces - 1u);
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) w[j][r] = pieces[T_SRC0].v[row16[r] + p];
    }
    [[unroll]] for (uint j = 0u; j < PASS; ++j) {
      const uint p = p0 + lane + j * WG;
      if (p < npieces) {
        [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
          const vec4 a0 = act4(acol[c] + 32u * p), a1 = act4(acol[c] + 32u * p + 16u);
          [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r * NCOLS + c] += dot8(w[j][r], a0, a1);
        }
      }
    }
  }

  reduce_sums();
  const uint t = gl_LocalInvocationID.x;
  if (t < NSUMS) {
    const uint r = t / NCOLS, c = t % NCOLS;
    if (r < valid) stf(t_off(T_DST) + 4u * (n0 + r) + c * t_nb(T_DST, 1u), red[t][0]);
  }
}
