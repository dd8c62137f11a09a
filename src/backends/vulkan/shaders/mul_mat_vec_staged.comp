#version 450
// MUL_MAT with 1..8 activation columns (decode) for F16, Q4_0, Q8_0, Q4_K,
// Q5_K and Q6_K rows (mul_mat_vec.comp takes the other types): a workgroup of
// WG computes ROWS weight rows against all NCOLS columns, a segment of SEG
// values at a time:
//  1. every invocation loads its share of the rows' segments in aligned
//     16-byte pieces, all loads issued before any is used (staged_rows.glsl);
//  2. USE_INT_DOT: meanwhile it quantizes the segment's activations to 8-bit
//     blocks in shared memory (unit_dot_q8.glsl), unless PREQUANT: then
//     quantize_q8.comp made them once and step 4 reads them from src2;
//  3. it stores the pieces to shared memory; barrier;
//  4. it takes units of 32 values (F16: 8): per column it reads the unit's
//     activations once, and dots them with the unit of every row
//     (staged_units.glsl; integer or float products: unit_dot_*.glsl).
// The ROWS x NCOLS sums are then reduced over the workgroup (reduce.glsl),
// and with PREQUANT and NORM_SCALE scaled by the codes' pending norm
// (norm_scale.glsl).
// The host picks WG (the segment's units, within 32..128), ROWS and SEG
// (vk_matvec_plan.cpp), so that the shared memory fits the device.
#include "common.glsl"
#include "blocks.glsl"
layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint WTYPE = 2u;
layout(constant_id = 1) const uint NCOLS = 1u;
layout(constant_id = 2) const bool A_VEC4 = false;  // columns 16-byte aligned (vk_graph_plan.cpp)
layout(constant_id = 4) const uint ROWS = 1u;
layout(constant_id = 5) const uint SEG = 32u;  // values per segment, a multiple of UNIT
const uint WG = gl_WorkGroupSize.x;
const uint NSUMS = ROWS * NCOLS;

#include "act_vec4.glsl"

uint acol[NCOLS];  // byte address of each activation column
float acc[NSUMS];

#include "staged_rows.glsl"
#include "staged_units.glsl"
#ifdef USE_INT_DOT
#include "unit_dot_q8.glsl"
#else
#include "unit_dot_f32.glsl"
#endif
#include "reduce.glsl"

#ifdef PREQUANT
#include "norm_scale.glsl"
// PREQUANT: an invocation's unit of the segment (the host makes WG at least
// the segment's units), its activation blocks loaded with the weights, before
// the barrier, rather than after it.
Act pre[NCOLS];
void prefetch_act(uint k0, uint len) {
  const uint u = min(gl_LocalInvocationID.x, len / UNIT - 1u);
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) pre[c] = load_act(c, k0, u);
}
#endif

// acc += the staged segment at k0 (len values) times the activations.
void dot_segment(RowSegment g, uint k0, uint len) {
  uint base[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) base[r] = slot_base(g, r);
#ifdef PREQUANT
  const uint u = gl_LocalInvocationID.x;
  if (u < len / UNIT) {
    norm_add(pre[0]);
    [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r * NCOLS + c] += unit_dot(staged_unit(base[r], u), pre[c]);
    }
  }
#else
  for (uint u = gl_LocalInvocationID.x; u < len / UNIT; u += WG) {
    [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
      const Act a = load_act(c, k0, u);
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r * NCOLS + c] += unit_dot(staged_unit(base[r], u), a);
    }
  }
#endif
}

void main() {
  const uint N = t_ne(T_DST, 0u), B2 = t_ne(T_DST, 2u);
  const uint row_groups = (N + ROWS - 1u) / ROWS, o = wg_index();
  if (o >= row_groups * B2 * t_ne(T_DST, 3u)) return;  // uniform per workgroup
  const uint n0 = (o % row_groups) * ROWS, b2 = (o / row_groups) % B2, b3 = o / (row_groups * B2);
  const uint r2 = B2 / t_ne(T_SRC0, 2u), r3 = t_ne(T_DST, 3u) / t_ne(T_SRC0, 3u);
  const uint wbase = t_off(T_SRC0) + (b2 / r2) * t_nb(T_SRC0, 2u) + (b3 / r3) * t_nb(T_SRC0, 3u);
  const uint abase = t_off(T_SRC1) + b2 * t_nb(T_SRC1, 2u) + b3 * t_nb(T_SRC1, 3u);
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) acol[c] = abase + c * t_nb(T_SRC1, 1u);
#ifdef PREQUANT
  // Flat activation row (b3 B2 + b2) NCOLS + c, as quantize_q8.comp numbers them.
  const uint qrow = (b3 * B2 + b2) * NCOLS;
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c)
    qcol[c] = (t_off(T_SRC2) >> 4) + 3u * (qrow + c) * (t_ne(T_SRC0, 0u) / 32u);
#endif
  [[unroll]] for (uint i = 0u; i < NSUMS; ++i) acc[i] = 0.0;

  const uint K = t_ne(T_SRC0, 0u), stride = t_nb(T_SRC0, 1u);
  RowSegment g = RowSegment(wbase + n0 * stride, stride, min(ROWS, N - n0), 0u, 0u);
  for (uint k0 = 0u; k0 < K; k0 += SEG) {
    const uint len = min(SEG, K - k0);
    g.offset = k0 / BLOCK * BLOCK_BYTES;
    g.nbytes = len / BLOCK * BLOCK_BYTES;
    stage_load(g);
#ifdef PREQUANT
    prefetch_act(k0, len);
#endif
#if defined(USE_INT_DOT) && !defined(PREQUANT)
    quantize_segment(k0, len);
#endif
    stage_store(g);
    barrier();
    dot_segment(g, k0, len);
    barrier();  // before the next segment overwrites the staged rows and codes
  }

#ifdef PREQUANT
  norm_scale_share();
#endif
  reduce_sums();
  const uint t = gl_LocalInvocationID.x;
#ifdef PREQUANT
  if (NORM_SCALE && t < NSUMS) red[t][0] *= norm_scale();
#endif
  if (t < NSUMS) {
    const uint r = t / NCOLS, c = t % NCOLS;
    if (r < g.valid) {
      stf(t_off(T_DST) + 4u * (n0 + r) + c * t_nb(T_DST, 1u) + b2 * t_nb(T_DST, 2u) + b3 * t_nb(T_DST, 3u),
          red[t][0]);
    }
  }
}
