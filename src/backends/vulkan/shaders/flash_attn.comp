#version 450
// FLASH_ATTN: one workgroup of 128 invocations per (query token t, head h).
// (Decode over an aligned F16 cache takes flash_attn_vec.comp: vk_graph_plan.cpp.)
// K/V are walked in tiles of 32 positions:
//  1. scores: four invocations per position, each a quarter of the dot
//     product (interleaved words of the K row, so that the four read adjacent
//     bytes), summed through shared memory;
//  2. the online softmax (running max m, running sum l) over the tile;
//  3. P·V: invocation i owns output dim i % D (and i + 128 when D > 128); when
//     D < 128 the 128 / D groups of invocations split the tile's positions and
//     are summed at the end.
// (One invocation per position walking all D dims of its K row, then all 64
// positions per output dim, took 21 us per decode step of llama-1b on the
// H200: a chain of D dependent-address loads per invocation.)
// F16 K/V rows at 4-byte aligned addresses are read a word (two values) at a
// time; other types and alignments element by element (dequant.glsl).
#include "common.glsl"
#include "dequant.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint KVTYPE = 0u;

const uint WG = 128u, TILE = 32u, SLICES = WG / TILE;

shared float qv[256];
shared float part[WG];  // partial dot products, then the groups' P·V sums
shared float sp[TILE];  // scores, then probabilities

#include "attn_out.glsl"

// Slice `s` of the dot product of q with the K row at byte `row`.
float partial_dot(uint row, uint D, uint s, bool words) {
  float dot = 0.0;
  if (words) {
    for (uint k = s; k < D / 2u; k += SLICES) {
      const uint w = bufs[T_SRC1].w[(row >> 2) + k];
      dot += qv[2u * k] * half_to_float(w & 0xFFFFu) + qv[2u * k + 1u] * half_to_float(w >> 16);
    }
    return dot;
  }
  for (uint d = s; d < D; d += SLICES) dot += qv[d] * dq(T_SRC1, KVTYPE, row, d);
  return dot;
}

// V at position row `row`, dim d.
float v_at(uint row, uint d, bool words) {
  if (words) return half_to_float((bufs[T_SRC2].w[(row >> 2) + (d >> 1)] >> ((d & 1u) * 16u)) & 0xFFFFu);
  return dq(T_SRC2, KVTYPE, row, d);
}

void main() {
  const uint D = t_ne(T_SRC0, 0u), T = t_ne(T_SRC0, 1u), H = t_ne(T_SRC0, 2u);
  const uint o = wg_index();
  if (o >= T * H) return;  // uniform per workgroup
  const uint t = o % T, h = o / T, i = gl_LocalInvocationID.x;
  const uint n_kv = t_ne(T_SRC1, 1u), hkv = h / (H / t_ne(T_SRC1, 2u));
  const uint q = t_off(T_SRC0) + t * t_nb(T_SRC0, 1u) + h * t_nb(T_SRC0, 2u);
  for (uint d = i; d < D; d += WG) qv[d] = ldf(T_SRC0, q + 4u * d);
  const bool masked = p_u(0u) != 0u;
  const uint mrow = masked ? t_off(T_SRC3) + t * t_nb(T_SRC3, 1u) : 0u;
  const uint kbase = t_off(T_SRC1) + hkv * t_nb(T_SRC1, 2u), kstride = t_nb(T_SRC1, 1u);
  const uint vbase = t_off(T_SRC2) + hkv * t_nb(T_SRC2, 2u), vstride = t_nb(T_SRC2, 1u);
  const bool k_words = KVTYPE == 1u && D % 2u == 0u && ((kbase | kstride) & 3u) == 0u;
  const bool v_words = KVTYPE == 1u && ((vbase | vstride) & 3u) == 0u;
  const float scale = p_f(0u), NEG_INF = neg_inf();
  // P·V: dim i % D of group i / D (G groups), and dim i + WG when D > WG.
  const uint G = max(1u, WG / D), g = i / D, d0 = i % D;
  const bool pv = g < G;
  barrier();

  float m = NEG_INF, l = 0.0;
  float acc[2] = float[2](0.0, 0.0);
  for (uint j0 = 0u; j0 < n_kv; j0 += TILE) {
    const uint p = i / SLICES, j = j0 + p;
    const float mk = j < n_kv && masked ? ldf(T_SRC3, mrow + 4u * j) : 0.0;
    const bool live = j < n_kv && !is_neg_inf(mk);
    part[i] = live ? partial_dot(kbase + j * kstride, D, i % SLICES, k_words) : 0.0;
    barrier();
    if (i < TILE) {
      const float dot = part[SLICES * i] + part[SLICES * i + 1u] + part[SLICES * i + 2u] +
                        part[SLICES * i + 3u];
      const uint ji = j0 + i;
      const float mi = ji < n_kv && masked ? ldf(T_SRC3, mrow + 4u * ji) : 0.0;
      sp[i] = ji < n_kv && !is_neg_inf(mi) ? scale * dot + mi : NEG_INF;
    }
    barrier();
    float tile_max = NEG_INF;
    for (uint k = 0u; k < TILE; ++k) tile_max = max(tile_max, sp[k]);
    const float m_new = max(m, tile_max);
    barrier();  // every invocation has read the scores
    if (!is_neg_inf(m_new)) {  // uniform: every invocation has the same m_new
      if (i < TILE) sp[i] = is_neg_inf(sp[i]) ? 0.0 : exp_acc(sp[i] - m_new);
      const float corr = is_neg_inf(m) ? 0.0 : exp_acc(m - m_new);
      barrier();
      const uint n_tile = min(TILE, n_kv - j0);
      float psum = 0.0;
      for (uint k = 0u; k < n_tile; ++k) psum += sp[k];
      l = l * corr + psum;
      if (pv) {
        [[unroll]] for (uint r = 0u; r < 2u; ++r) {
          const uint d = d0 + WG * r;
          if (d < D) {
            float a = acc[r] * corr;
            for (uint k = g; k < n_tile; k += G) {
              if (sp[k] != 0.0) a += sp[k] * v_at(vbase + (j0 + k) * vstride, d, v_words);
            }
            acc[r] = a;
          }
        }
      }
      m = m_new;
    }
    barrier();  // before the next tile overwrites part and sp
  }
  // The groups' sums: group 0 adds the others' (D < WG only).
  part[i] = acc[0];
  barrier();
  if (g == 0u && i < D) {
    float out0 = 0.0;
    for (uint k = 0u; k < G; ++k) out0 += part[d0 + k * D];
    const uint y = t_off(T_DST) + h * t_nb(T_DST, 1u) + t * t_nb(T_DST, 2u);
    const float inv = l > 0.0 ? 1.0 / l : 0.0;
    stf(y + 4u * d0, out0 * inv);
    if (d0 + WG < D) stf(y + 4u * (d0 + WG), acc[1] * inv);
#ifdef USE_CODES
    qv[d0] = out0 * inv;
    if (d0 + WG < D) qv[d0 + WG] = acc[1] * inv;
#endif
  }
#ifdef USE_CODES
  store_codes(t, h, H, D);
#endif
}
