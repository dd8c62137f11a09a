#version 450
// FLASH_ATTN for prompts (more than 8 query tokens; D = 32, 64 or 128): a
// workgroup of 128 per (16 query tokens, head) walks K/V in tiles of 32
// positions that its 16 queries share, so each K/V row is read once per 16
// tokens; flash_attn.comp, one workgroup per (token, head), reads every row
// once per token. Per tile:
//  1. K's 32 rows into shared memory as float, then the 16 x 32 scores, eight
//     invocations per query and four positions each, scaled and masked;
//  2. the online softmax by the same eight invocations: the tile's max and
//     sum through shared memory, each invocation's four probabilities, the
//     running max m and sum l (the same in all eight: each reads the partial
//     results in the same order), and the factor corr that rescales the
//     query's output so far (one invocation per query, walking the tile's 32
//     scores, had taken 40% of the kernel: session 44);
//  3. V's 32 rows into the same shared memory, then O = O · corr + P · V:
//     invocation i owns dim i % D of queries i / D + (128 / D) · c.
// A tile that every query masks (a causal prompt's tiles past its last token)
// is skipped whole, read from the mask before any K/V row. The tiling and the online
// softmax: Dao et al., "FlashAttention" (2022), algorithm 1.
#include "common.glsl"
#include "dequant.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint KVTYPE = 0u;

const uint WG = 128u, BQ = 16u, BKV = 32u;
const uint RS = 129u;       // row stride of the shared rows (D <= 128, padded against bank conflicts)
shared float qs[BQ * RS];   // the queries, [query][d]
shared float kv[BKV * RS];  // K's rows, then V's, [position][d]
shared float sp[BQ * BKV];  // probabilities, [query][position]
shared float pmax[WG];      // per invocation: the largest of its four scores
shared float psum[WG];      // per invocation: the sum of its four probabilities
shared float corr[BQ];      // per query: the tile's rescale factor, at the end 1 / l
shared uint live[2];        // some score of the tile is not masked (tile parity)

#include "attn_out.glsl"

// Rows j0 .. j0 + BKV - 1 of K or V (binding t, byte address base, stride) into
// kv, zeros past n_kv: four invocations per row, interleaved so that they read
// adjacent words. F16 rows at 4-byte aligned addresses a word (two values) at a time.
void load_tile(uint t, uint base, uint stride, uint j0, uint n_kv, uint D, bool words) {
  const uint i = gl_LocalInvocationID.x, r = i / 4u, s = i % 4u, j = j0 + r;
  if (j >= n_kv) {
    for (uint d = s; d < D; d += 4u) kv[r * RS + d] = 0.0;
    return;
  }
  const uint row = base + j * stride;
  if (words) {
    for (uint w = s; w < D / 2u; w += 4u) {
      const uint x = bufs[t].w[(row >> 2) + w];
      kv[r * RS + 2u * w] = half_to_float(x & 0xFFFFu);
      kv[r * RS + 2u * w + 1u] = half_to_float(x >> 16);
    }
    return;
  }
  for (uint d = s; d < D; d += 4u) kv[r * RS + d] = dq(t, KVTYPE, row, d);
}

void main() {
  const uint D = t_ne(T_SRC0, 0u), T = t_ne(T_SRC0, 1u), H = t_ne(T_SRC0, 2u);
  const uint nqb = (T + BQ - 1u) / BQ, o = wg_index();
  if (o >= nqb * H) return;  // uniform per workgroup
  const uint t0 = (o % nqb) * BQ, h = o / nqb, i = gl_LocalInvocationID.x;
  const uint n_kv = t_ne(T_SRC1, 1u), hkv = h / (H / t_ne(T_SRC1, 2u));
  for (uint e = i; e < BQ * D; e += WG) {
    const uint qq = e / D, d = e % D, t = t0 + qq;
    qs[qq * RS + d] =
        t < T ? ldf(T_SRC0, t_off(T_SRC0) + t * t_nb(T_SRC0, 1u) + h * t_nb(T_SRC0, 2u) + 4u * d) : 0.0;
  }
  const bool masked = p_u(0u) != 0u;
  const uint kbase = t_off(T_SRC1) + hkv * t_nb(T_SRC1, 2u), kstride = t_nb(T_SRC1, 1u);
  const uint vbase = t_off(T_SRC2) + hkv * t_nb(T_SRC2, 2u), vstride = t_nb(T_SRC2, 1u);
  const bool k_words = KVTYPE == 1u && D % 2u == 0u && ((kbase | kstride) & 3u) == 0u;
  const bool v_words = KVTYPE == 1u && ((vbase | vstride) & 3u) == 0u;
  const float scale = p_f(0u), NEG_INF = neg_inf();
  // Scores: query sq = i / 8 at positions sj + 8c (c < 4).
  const uint sq = i / 8u, sj = i % 8u;
  const bool sq_in = t0 + sq < T;
  const uint mrow = masked ? t_off(T_SRC3) + min(t0 + sq, T - 1u) * t_nb(T_SRC3, 1u) : 0u;
  // Output: dim d0 of queries g + G·c (c < BQ / G); the host gives D | 128.
  const uint G = WG / D, g = i / D, d0 = i % D, NQ = BQ / G;
  if (i == 0u) live[0] = 0u;
  barrier();

  float acc[BQ];
  [[unroll]] for (uint c = 0u; c < BQ; ++c) acc[c] = 0.0;
  float m = NEG_INF, l = 0.0;  // query sq's, the same in its eight invocations
  for (uint j0 = 0u, f = 0u; j0 < n_kv; j0 += BKV, f ^= 1u) {
    // The mask of this invocation's four scores first: live[f] says whether the
    // tile has any score to compute. live[f ^ 1] (the next tile's) is cleared
    // once every invocation has passed this tile's first barrier: nothing reads
    // or writes it until the next tile.
    float mk[4];
    bool ok[4], any = false;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) {
      const uint j = j0 + sj + 8u * c;
      mk[c] = j < n_kv && sq_in && masked ? ldf(T_SRC3, mrow + 4u * j) : 0.0;
      ok[c] = j < n_kv && sq_in && !is_neg_inf(mk[c]);
      any = any || ok[c];
    }
    if (any) live[f] = 1u;
    barrier();
    const bool tile_live = live[f] != 0u;  // uniform
    if (i == 0u) live[f ^ 1u] = 0u;
    if (tile_live) {
      load_tile(T_SRC1, kbase, kstride, j0, n_kv, D, k_words);
      barrier();
      float dot[4] = float[4](0.0, 0.0, 0.0, 0.0);
      for (uint d = 0u; d < D; ++d) {
        const float qd = qs[sq * RS + d];
        [[unroll]] for (uint c = 0u; c < 4u; ++c) dot[c] += qd * kv[(sj + 8u * c) * RS + d];
      }
      float mine = NEG_INF;
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        dot[c] = ok[c] ? scale * dot[c] + mk[c] : NEG_INF;
        mine = max(mine, dot[c]);
      }
      pmax[i] = mine;
      barrier();
      // The online softmax by the query's eight invocations, each over its four
      // scores; all eight read the partial maxima and sums in the same order,
      // so they hold the same m and l.
      float tile_max = NEG_INF;
      [[unroll]] for (uint k = 0u; k < 8u; ++k) tile_max = max(tile_max, pmax[8u * sq + k]);
      const float m_new = max(m, tile_max);
      float part = 0.0;
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        const float p = is_neg_inf(dot[c]) ? 0.0 : exp_acc(dot[c] - m_new);
        sp[sq * BKV + sj + 8u * c] = p;
        part += p;
      }
      psum[i] = part;
      const float cq = is_neg_inf(m) ? 0.0 : exp_acc(m - m_new);
      if (sj == 0u) corr[sq] = cq;
      barrier();  // the probabilities are in sp, and K is no longer read
      float tile_sum = 0.0;
      [[unroll]] for (uint k = 0u; k < 8u; ++k) tile_sum += psum[8u * sq + k];
      l = l * cq + tile_sum;
      m = m_new;
      load_tile(T_SRC2, vbase, vstride, j0, n_kv, D, v_words);
      barrier();
      [[unroll]] for (uint c = 0u; c < BQ; ++c) {
        if (c < NQ) {
          const uint qq = g + G * c;
          float a = acc[c] * corr[qq];
          for (uint k = 0u; k < BKV; ++k) a += sp[qq * BKV + k] * kv[k * RS + d0];
          acc[c] = a;
        }
      }
    }
    barrier();  // before the next tile overwrites kv and sp
  }
  if (sj == 0u) corr[sq] = l > 0.0 ? 1.0 / l : 0.0;  // a fully masked query writes zeros
  barrier();
  [[unroll]] for (uint c = 0u; c < BQ; ++c) {
    const uint qq = g + G * c, t = t0 + qq;
    if (c < NQ && t < T) stf(t_off(T_DST) + h * t_nb(T_DST, 1u) + t * t_nb(T_DST, 2u) + 4u * d0, acc[c] * corr[qq]);
  }
}
