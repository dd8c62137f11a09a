#version 450
// The activations of MUL_MATs with 8-bit activations (src0: F32, rows of a
// multiple of 32 values) quantized once, for every workgroup of every product
// over them to read (unit_dot_q8.glsl, PREQUANT): one invocation per block of
// 32 values, written to the destination (the recording's scratch buffer) as
// 48 bytes: codes 0..15, codes 16..31, then d's bits and the code sums
// (q8_block.glsl) and a pad word pair, so every block is three uvec4s. Block i
// of flat row r is block r * (ne0 / 32) + i.
#include "common.glsl"
#include "rows.glsl"
#include "q8_block.glsl"
layout(local_size_x = 64) in;

void main() {
  const uint per_row = t_ne(T_SRC0, 0u) / 32u;
  const uint idx = wg_index() * 64u + gl_LocalInvocationID.x;
  if (idx >= n_rows(T_SRC0) * per_row) return;
  const uint a = row_addr(T_SRC0, idx / per_row) + 128u * (idx % per_row);
  vec4 x[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    const uint e = a + 16u * j;
    x[j] = vec4(ldf(T_SRC0, e), ldf(T_SRC0, e + 4u), ldf(T_SRC0, e + 8u), ldf(T_SRC0, e + 12u));
  }
  const Q8Block b = quantize_block(x);
  const uint o = (t_off(T_DST) >> 2) + 12u * idx;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    dst.w[o + j] = b.q0[j];
    dst.w[o + 4u + j] = b.q1[j];
  }
  dst.w[o + 8u] = b.meta.x;
  dst.w[o + 9u] = b.meta.y;
  dst.w[o + 10u] = 0u;
  dst.w[o + 11u] = 0u;
}
