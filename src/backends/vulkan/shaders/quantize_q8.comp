#version 450
// The activations of MUL_MATs with 8-bit activations (src0: F32, rows of a
// multiple of 32 values) quantized once, for every workgroup of every product
// over them to read (unit_dot_q8.glsl, PREQUANT): one invocation per block of
// 32 values, written to the destination (the recording's scratch buffer) as
// 48 bytes: codes 0..15, codes 16..31, then d's bits and the code sums
// (q8_block.glsl) and a pad word pair, so every block is three uvec4s. Block i
// of flat row r is block r * (ne0 / 32) + i.
// SWIGLU 1 (vk_fusion.hpp's kSwigluQuant): the activations are SWIGLU(gate =
// src0, up = src1), computed as binary.comp computes them and also written to
// slot T_OUT0 (F32 rows in whole words, apart from the inputs: the host
// checks); an invocation per value, so the grid is the values / 64; with
// USE_SUBGROUP (Features::subgroup_lanes8) eight of them quantize each block
// (q8_lanes.glsl).
#include "common.glsl"
#include "rows.glsl"
#include "q8_block.glsl"
#ifdef USE_SUBGROUP
#include "q8_lanes.glsl"
#endif
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint SWIGLU = 0u;

// The fused SWIGLU's output (outs[0], slot T_OUT0).
layout(std430, set = 0, binding = 3) buffer Out { uint w[]; } outs[1];

// Block i of the destination, 48 bytes as above.
void store_block(uint i, Q8Block b) {
  const uint o = (t_off(T_DST) >> 2) + 12u * i;
  [[unroll]] for (uint j = 0u; j < 12u; ++j) dst.w[o + j] = q8_word(b, j);
}

shared float values[64];

// SWIGLU: an invocation per value computes it and writes it; the first
// invocation of each 32 then quantizes them from shared memory (a block per
// invocation had 7 workgroups for a 14,336-value row, each walking its 32
// values' exponentials in turn: slower than the separate dispatches).
void swiglu_main() {
#ifdef USE_SUBGROUP
  const uint t = lane_index();  // then the first 16 quantize the two blocks (q8_lanes.glsl)
#else
  const uint t = gl_LocalInvocationID.x;
#endif
  const uint K = t_ne(T_SRC0, 0u);
  const uint idx = wg_index() * 64u + t, total = n_rows(T_SRC0) * K;
  float y = 0.0;
  if (idx < total) {
    const uint row = idx / K, k = idx % K;
    y = silu_acc(ldf(T_SRC0, row_addr(T_SRC0, row) + 4u * k)) *
        ldf(T_SRC1, row_addr(T_SRC1, row) + 4u * k);
    outs[0].w[(row_addr(T_OUT0, row) >> 2) + k] = floatBitsToUint(y);
  }
  values[t] = y;
  barrier();
#ifdef USE_SUBGROUP
  // Places 0..15: block t / 8 of the two, values 4 (t % 8) .. + 3, a block's
  // eight going on or returning together (the total is a multiple of 32).
  const uint first = wg_index() * 64u + 32u * (t / 8u);
  if (t >= 16u || first >= total) return;
  const uint j = t % 8u, v = 32u * (t / 8u) + 4u * j;
  const uvec2 w =
      quantize_lanes(vec4(values[v], values[v + 1u], values[v + 2u], values[v + 3u]), j);
  const uint o = (t_off(T_DST) >> 2) + 12u * (first / 32u);
  dst.w[o + j] = w.x;
  if (j < 4u) dst.w[o + 8u + j] = w.y;
#else
  if (t % 32u != 0u || idx >= total) return;
  vec4 x[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j)
    x[j] = vec4(values[t + 4u * j], values[t + 4u * j + 1u], values[t + 4u * j + 2u],
                values[t + 4u * j + 3u]);
  store_block(idx / 32u, quantize_block(x));
#endif
}

void main() {
  if (SWIGLU != 0u) {
    swiglu_main();
    return;
  }
  const uint per_row = t_ne(T_SRC0, 0u) / 32u;
  const uint idx = wg_index() * 64u + gl_LocalInvocationID.x;
  if (idx >= n_rows(T_SRC0) * per_row) return;
  const uint a = row_addr(T_SRC0, idx / per_row) + 128u * (idx % per_row);
  vec4 x[8];
  if ((a & 3u) == 0u) {  // the row's blocks in whole words: no per-value alignment branch
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const uint e = (a >> 2) + 4u * j;
      x[j] = uintBitsToFloat(words4(T_SRC0, e));
    }
  } else {
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const uint e = a + 16u * j;
      x[j] = vec4(ldf(T_SRC0, e), ldf(T_SRC0, e + 4u), ldf(T_SRC0, e + 8u), ldf(T_SRC0, e + 12u));
    }
  }
  store_block(idx, quantize_block(x));
}
