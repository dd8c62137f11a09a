#version 450
#if defined(USE_NORM_TAIL) || defined(USE_SWIGLU_TAIL)
// row_blocks.glsl's release and acquire (Features::memory_model).
#pragma use_vulkan_memory_model
#endif
// MUL_MAT of Q4_0, Q4_K or Q6_K rows with 1..8 activation columns read as
// 8-bit codes from src2 (decode with integer dot products:
// vk_matvec_plan.cpp picks it), with no staging through shared memory. A row
// is a run of items:
//  * Q4_0: a block (18 bytes, one unit of 32 values);
//  * Q4_K: a quarter of a block: its 16-byte head (d, dmin, scales) and the
//    32 bytes of nibbles of units 2p and 2p + 1 (low and high nibbles);
//  * Q6_K: units 4h + p and 4h + p + 2 of a block (half h, p = 0 or 1),
//    which share 32 bytes of low nibbles and 32 of high bits, with their
//    scales and d.
// A workgroup of WG computes ROWS rows; invocation i takes items i, i + WG,
// ... of each row, one per pass. A pass first loads the aligned words of its
// items (Q4_0: the 5 words around its 18 bytes, which start at an even byte;
// Q4_K: 12 words, or 3 uvec4s when the rows are 16-byte aligned; Q6_K: 22),
// all before any is used, then the activation blocks, and dots the units
// (unit_dot_q8.glsl). Where the staged kernel
// (mul_mat_vec_staged.comp) takes the row in segments, each through shared
// memory and two barriers, here a pass has all its bytes in flight at once
// and no barrier. With EARLY (Q6_K and Q4_0 rows: vk_matvec_plan.cpp's
// plan_matvec_early_acts) the activation blocks' loads are issued with the
// weights', before any is used, not after them. Layouts as
// include/polyinfer/quant_blocks.hpp.
// With ROPE or CACHE (vk_fusion.hpp's Unit::rope and Unit::cache: a later
// ROPE over the output and/or the CPY of it into the KV cache), the
// epilogue also writes those nodes' outputs from the sums it holds, so that
// neither needs a dispatch or a barrier of its own (epilogue() below; with
// rows one per workgroup, paired_epilogue()).
// USE_NORM_TAIL (module mul_mat_vec_direct_norm; Unit::norm): the residual
// ADD after the product and the codes of the next norm's input times its
// weight, by the workgroups that finish each block of 32 rows
// (norm_blocks.glsl). USE_SWIGLU_TAIL (module mul_mat_vec_direct_swiglu;
// Unit::swiglu): the gate and up products in one dispatch, their workgroups
// alternating, and SWIGLU over them with its codes, 32 rows at a time
// (swiglu_blocks.glsl). NORM_SCALE (Unit::scale_norm): the codes' norm is
// pending, and the sums are scaled by it (norm_scale.glsl).
#include "common.glsl"
#include "blocks.glsl"
layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint WTYPE = 2u;  // Q4_0 (2), Q4_K (12) or Q6_K (14)
layout(constant_id = 1) const uint NCOLS = 1u;
layout(constant_id = 4) const uint ROWS = 2u;
layout(constant_id = 5) const bool PIECES = false;  // Q4_K rows 16-byte aligned: 3 uvec4 per item
layout(constant_id = 6) const bool ROPE = false;    // Unit::rope: normal mode, ROWS 1 or even
layout(constant_id = 7) const uint CACHE = 0u;      // Unit::cache: 0, or the cache's type + 1
layout(constant_id = 9) const bool EARLY = false;   // activation blocks loaded with the weights
const uint WG = gl_WorkGroupSize.x;
// A ROPE pair's two rows in two workgroups: paired_epilogue().
const bool PAIRED = ROPE && ROWS == 1u;
const uint NSUMS = ROWS * NCOLS;
const bool QK = WTYPE == 12u, Q6 = WTYPE == 14u;
const uint ITEM_UNITS = QK || Q6 ? 2u : 1u;
// Words of an item: 5 (Q4_0), 12 (Q4_K) or 22 (Q6_K); the arrays take 22
// whatever the type, since glslc sizes them with the constants' defaults.
const uint ITEM_WORDS = 22u;
#define PREQUANT 1

float acc[NSUMS];

#include "unit.glsl"
#include "unit_dot_q8.glsl"
#include "reduce.glsl"
#include "rope_pair.glsl"
#include "norm_scale.glsl"
#ifdef USE_NORM_TAIL
#include "q8_lanes.glsl"
#include "norm_blocks.glsl"
#endif
#ifdef USE_SWIGLU_TAIL
#include "q8_lanes.glsl"
#include "swiglu_blocks.glsl"
// The workgroup's weights (swiglu_blocks.glsl's weight_slot): uniform per
// workgroup. (A copy of the loop per slot, each slot a constant, ran no
// faster on the H200, session 36.)
uint w_slot = T_SRC0;
#define W_SLOT w_slot
#else
#define W_SLOT T_SRC0
#endif

uint word(uint i) { return bufs[W_SLOT].w[i]; }

// Byte addresses of the parts of Q6_K item q of the row at byte `row`: low
// nibbles, high bits, the 8 scale bytes of half h, d.
uvec4 q6_parts(uint row, uint q) {
  const uint blk = row + 210u * (q / 4u), h = (q % 4u) / 2u;
  return uvec4(blk + 64u * h + 32u * (q % 2u), blk + 128u + 32u * h, blk + 192u + 8u * h, blk + 208u);
}

// The words of item q of the row at byte `row`.
void load_item(uint row, uint q, out uint w[ITEM_WORDS]) {
  if (Q6) {
    const uvec4 a = q6_parts(row, q) >> 2;
    [[unroll]] for (uint k = 0u; k < 9u; ++k) w[k] = word(a.x + k);
    [[unroll]] for (uint k = 0u; k < 9u; ++k) w[9u + k] = word(a.y + k);
    [[unroll]] for (uint k = 0u; k < 3u; ++k) w[18u + k] = word(a.z + k);
    w[21] = word(a.w);
  } else if (QK && PIECES) {
    const uint head = (row >> 4) + 9u * (q / 4u), qs = head + 1u + 2u * (q % 4u);
    const uvec4 h = ubufs[W_SLOT].v[head], a = ubufs[W_SLOT].v[qs], b = ubufs[W_SLOT].v[qs + 1u];
    [[unroll]] for (uint k = 0u; k < 4u; ++k) {
      w[k] = h[k];
      w[4u + k] = a[k];
      w[8u + k] = b[k];
    }
  } else if (QK) {
    const uint head = (row + 144u * (q / 4u)) >> 2, qs = head + 4u + 8u * (q % 4u);
    [[unroll]] for (uint k = 0u; k < 4u; ++k) w[k] = word(head + k);
    [[unroll]] for (uint k = 0u; k < 8u; ++k) w[4u + k] = word(qs + k);
  } else {
    const uint i = (row + 18u * q) >> 2;
    [[unroll]] for (uint k = 0u; k < 5u; ++k) w[k] = word(i + k);
  }
}

// Unit u of item q (loaded from the row at byte `row`) as staged_units.glsl
// decodes it.
Unit item_unit(uint w[ITEM_WORDS], uint row, uint q, uint u) {
  if (Q6) {
    // Unit 4h + p + 2u; its scales at byte 2 (p + 2u) of the half's 8.
    const uvec4 a = q6_parts(row, q);
    const uint sl = (a.x & 3u) * 8u, sh = (a.y & 3u) * 8u, p = q % 2u;
    const uvec4 l0 = funnel(uvec4(w[0], w[1], w[2], w[3]), uvec4(w[1], w[2], w[3], w[4]), sl);
    const uvec4 l1 = funnel(uvec4(w[4], w[5], w[6], w[7]), uvec4(w[5], w[6], w[7], w[8]), sl);
    const uvec4 h0 = funnel(uvec4(w[9], w[10], w[11], w[12]), uvec4(w[10], w[11], w[12], w[13]), sh);
    const uvec4 h1 = funnel(uvec4(w[13], w[14], w[15], w[16]), uvec4(w[14], w[15], w[16], w[17]), sh);
    const uint o = (a.z & 3u) + 2u * (p + 2u * u);  // even: the two bytes share a word
    const uint sw = o < 4u ? w[18] : o < 8u ? w[19] : w[20];
    return q6_k_unit(l0, l1, h0, h1, p + 2u * u, int(sw >> ((o & 3u) * 8u)),
                     half_to_float((w[21] >> ((a.w & 3u) * 8u)) & 0xFFFFu));
  }
  if (QK) {
    return q4_k_unit(uvec4(w[0], w[1], w[2], w[3]), uvec4(w[4], w[5], w[6], w[7]),
                     uvec4(w[8], w[9], w[10], w[11]), 2u * (q % 4u) + u);
  }
  // The block starts at byte 0 (s false) or 2 (s true) of w[0]: d, then 16
  // bytes of nibbles.
  const bool s = ((row + 18u * q) & 2u) != 0u;
  const uvec4 hi = uvec4(w[1], w[2], w[3], w[4]);
  return q4_0_unit(s ? w[0] >> 16 : w[0] & 0xFFFFu,
                   s ? hi : funnel(uvec4(w[0], w[1], w[2], w[3]), hi, 16u));
}

// The activation block of unit u of item q.
uint item_block(uint q, uint u) {
  if (Q6) return 8u * (q / 4u) + 4u * ((q % 4u) / 2u) + q % 2u + 2u * u;
  return ITEM_UNITS * q + u;
}

// Element e of head h of token c of the folded ROPE's output (slot T_OUT0,
// [D, H, T]) and, with CACHE, of the KV cache view (T_OUT1, type CACHE - 1).
void store_roped(uint h, uint c, uint e, float y) {
  if (ROPE) {
    const uint yrow = t_off(T_OUT0) + h * t_nb(T_OUT0, 1u) + c * t_nb(T_OUT0, 2u);
    outs[0].w[(yrow + 4u * e) >> 2] = floatBitsToUint(y);
  }
  if (CACHE != 0u)
    cache_store(1u, CACHE, t_off(T_OUT1) + h * t_nb(T_OUT1, 1u) + c * t_nb(T_OUT1, 2u), e, y);
}

// Row n of column c, whose sum v invocation t holds, as element e = n % D
// of head n / D of token c: the folded ROPE's output (its positions in
// T_SRC3, freq factors in T_SRC1, parameters the ROPE node's) and/or the KV
// cache row (store_roped). A pair (e, e + 1) is rotated by the invocation of
// e, which reads the sum of row n + 1 from red[] (ROWS even: both rows are
// this workgroup's).
void epilogue(uint n, uint c, float v, uint t) {
  const uint D = ROPE ? t_ne(T_OUT0, 0u) : t_ne(T_OUT1, 0u), e = n % D, h = n / D;
  if (!ROPE || e >= uint(p_i(1u))) {  // no ROPE, or a dim past n_rot: passed through
    store_roped(h, c, e, v);
    return;
  }
  if ((e & 1u) != 0u) return;
  const vec2 cs = rope_cos_sin(e / 2u, c, T_SRC3, T_SRC1);
  const float x1 = red[t + NCOLS][0];
  store_roped(h, c, e, v * cs.x - x1 * cs.y);
  store_roped(h, c, e + 1u, v * cs.y + x1 * cs.x);
}

// epilogue() where rows go one per workgroup (K-quants), so that the two
// rows of a pair are two workgroups': each swaps its sum v into the pair's
// word (slot T_OUT2, zeroed before every run of the recording:
// vk_graph_plan.cpp's reserve_zeroed) by one atomic, whose old value tells
// the second to arrive the other's sum; it rotates and stores the pair. A
// sum of +0 goes in as -0 (equal in every product), so that a zero word
// means none has arrived. One atomic round trip: counting arrivals apart
// from the sums took two.
void paired_epilogue(uint n, uint c, float v, uint a) {
  const uint D = t_ne(T_OUT0, 0u), e = n % D, h = n / D;
  stf(a, v);
  if (e >= uint(p_i(1u))) {
    store_roped(h, c, e, v);
    return;
  }
  const uint pair = (t_off(T_OUT2) >> 2) + c * (t_ne(T_DST, 0u) / 2u) + n / 2u;
  const uint mine = floatBitsToUint(v) == 0u ? 0x80000000u : floatBitsToUint(v);
  const uint other = atomicExchange(outs[2].w[pair], mine);
  if (other == 0u) return;  // the other row comes second
  const bool odd = (e & 1u) != 0u;
  const float x0 = odd ? uintBitsToFloat(other) : v, x1 = odd ? v : uintBitsToFloat(other);
  const vec2 cs = rope_cos_sin(e / 2u, c, T_SRC3, T_SRC1);
  store_roped(h, c, e & ~1u, x0 * cs.x - x1 * cs.y);
  store_roped(h, c, (e & ~1u) + 1u, x0 * cs.y + x1 * cs.x);
}

void main() {
  const uint N = t_ne(T_DST, 0u), row_groups = (N + ROWS - 1u) / ROWS;
#ifdef USE_SWIGLU_TAIL
  w_slot = weight_slot(wg_index());
  const uint o = wg_index() / 2u;
#else
  const uint o = wg_index();
#endif
  if (o >= row_groups) return;  // uniform per workgroup
  const uint n0 = o * ROWS, valid = min(ROWS, N - n0);
  const uint nb = t_ne(T_SRC0, 0u) / 32u, items = nb / ITEM_UNITS, stride = t_nb(W_SLOT, 1u);
  uint row[ROWS];  // clamped: the last workgroup's rows past N load row N - 1
  [[unroll]] for (uint r = 0u; r < ROWS; ++r)
    row[r] = t_off(W_SLOT) + (n0 + min(r, valid - 1u)) * stride;
  [[unroll]] for (uint c = 0u; c < NCOLS; ++c) qcol[c] = (t_off(T_SRC2) >> 4) + 3u * c * nb;
  [[unroll]] for (uint i = 0u; i < NSUMS; ++i) acc[i] = 0.0;

  const uint lane = gl_LocalInvocationID.x;
  for (uint q0 = 0u; q0 < items; q0 += WG) {
    // Loads at a clamped item, so that none waits on a branch.
    const uint q = q0 + lane, qc = min(q, items - 1u);
    uint w[ROWS][ITEM_WORDS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) load_item(row[r], qc, w[r]);
    Act early[2][NCOLS];
    if (EARLY) {
      [[unroll]] for (uint u = 0u; u < ITEM_UNITS; ++u)
        [[unroll]] for (uint c = 0u; c < NCOLS; ++c) early[u][c] = load_act(c, 0u, item_block(qc, u));
    }
    if (q < items) {
      [[unroll]] for (uint u = 0u; u < ITEM_UNITS; ++u) {
        [[unroll]] for (uint c = 0u; c < NCOLS; ++c) {
          const Act a = EARLY ? early[u][c] : load_act(c, 0u, item_block(q, u));
          if (c == 0u) norm_add(a);
          [[unroll]] for (uint r = 0u; r < ROWS; ++r)
            acc[r * NCOLS + c] += unit_dot(item_unit(w[r], row[r], q, u), a);
        }
      }
    }
  }

  norm_scale_share();
  reduce_sums();
  const uint t = gl_LocalInvocationID.x;
  if (NORM_SCALE && t < NSUMS) red[t][0] *= norm_scale();
  if (ROPE && !PAIRED) barrier();  // the pair's other sum is another invocation's red[]
#if defined(USE_NORM_TAIL) || defined(USE_SWIGLU_TAIL)
  bool last = false;  // this invocation stored its block's last row
#endif
  if (t < NSUMS) {
    const uint r = t / NCOLS, c = t % NCOLS;
    if (r < valid) {
      const uint a = t_off(T_DST) + 4u * (n0 + r) + c * t_nb(T_DST, 1u);
      if (PAIRED) {
        paired_epilogue(n0 + r, c, red[t][0], a);
      } else {
#if defined(USE_NORM_TAIL)
        last = store_row(a, red[t][0], (n0 + r) / 32u);
#elif defined(USE_SWIGLU_TAIL)
        last = store_swiglu_row(w_slot, n0 + r, red[t][0]);
#else
        stf(a, red[t][0]);
#endif
        if (ROPE || CACHE != 0u) epilogue(n0 + r, c, red[t][0], t);
      }
    }
  }
#ifdef USE_NORM_TAIL
  norm_block(n0 / 32u, last);
#endif
#ifdef USE_SWIGLU_TAIL
  swiglu_block(n0 / 32u, last);
#endif
}
