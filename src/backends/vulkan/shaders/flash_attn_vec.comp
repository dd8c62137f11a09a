#version 450
// FLASH_ATTN for a few query tokens (decode) over an F16 KV cache whose rows
// and heads start 16-byte aligned, D a multiple of 8 in 32..256, or a Q8_0
// cache whose rows and heads start at an even byte, D a multiple of 32
// (vk_graph_plan.cpp picks it; flash_attn.comp takes the rest). Workgroups
// of WG per (query token t, head h): one, or a long cache's splits (below). A K or V row is L = D / 8
// pieces of 8 values (F16: 16 bytes; Q8_0: a quarter of a block's codes and
// its scale); invocation i is lane i % L of slot i / L, and the P =
// WG / L slots walk the positions in chunks of C = P R, R positions each:
//  1. every invocation loads its lane's piece of the K row and of the V row
//     of its R positions, and their mask values, all before any is used (so
//     that the chunk's K and V are in flight together, where flash_attn.comp
//     reads K, waits on barriers, then reads V);
//  2. it dots its 8 dims of q with its K pieces; barrier; C invocations add
//     a position's L partial dots into its score (SCORE_LANES, below: the L
//     lanes add them by shuffles, with no barrier);
//  3. online softmax over the chunk (running max m, each slot its own sum);
//  4. P·V: its 8 output dims from its R V pieces.
// Then the slots' sums are added through shared memory (SCORE_LANES: a
// subgroup's slots by shuffles first). A long cache is split
// (flash-decoding): the host gives each (token, head) SPLITS workgroups (p_u(1)),
// of which the first ceil(n_kv / 128) or so take consecutive runs of whole chunks;
// each writes its running max, sum and unnormalized output to a scratch region
// (slot T_OUT0), and the last to finish (an atomic count per (token, head) in slot
// T_OUT1, zeroed before every run of the recording) merges them; with one run the workgroup
// writes its output directly. R = 4: with R = 8 (workgroups
// of 128 or 256) llama-8b's attention took 24.5-25.1 us against 12.3 on the H200
// (BENCHMARKS.md, session 17), its 16 pieces per invocation costing more than the longer
// chunk saved.
// Softmax with a running max: Milakov & Gimelshein, "Online normalizer
// calculation for softmax" (2018); FlashAttention: Dao et al. (2022).
#include "common.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint KVTYPE = 1u;  // the cache's type: F16 (1) or Q8_0 (8)

const uint WG = 256u, R = 4u;
const bool Q8 = KVTYPE == 8u;

// K (src1) and V (src2) as 16-byte pieces; the host checks the alignment.
layout(std430, set = 0, binding = 1) readonly buffer Pieces { uvec4 v[]; } pieces[4];

// The splits' partial results and counts (slots T_OUT0, T_OUT1). Coherent:
// another workgroup reads them.
layout(std430, set = 0, binding = 3) coherent buffer Partials { uint w[]; } parts[3];
const uint MIN_SPLIT = 128u;  // fewest positions per split

shared float qv[256];   // the head's output (USE_CODES)
shared bool merging;    // this workgroup finished its (token, head) last
shared float red[8u * WG];  // partial dots (C L <= R WG), then the slots' sums (P D = 8 WG)
shared float sp[WG];    // the chunk's scores (C <= WG for D >= 32)
#ifdef USE_SUBGROUP
shared float smax[WG];  // each subgroup's largest score of the chunk
#endif

#include "attn_out.glsl"
#if defined(USE_CODES) && defined(USE_SUBGROUP)
#define SCORE_LANES  // q8_lanes.glsl (through attn_out.glsl) brings shuffles and lane_index()
#endif
#include "blocks.glsl"  // funnel, bytes_i, halves8

// Lane `lane`'s piece of the K or V row of source s at byte `row`, whose
// first byte is at `at` (piece_at). F16: its 16 bytes. Q8_0 (blocks of 34
// bytes: d, then 32 codes; the lane takes codes 8 (lane % 4) .. + 7 of block
// lane / 4): the word holding d and the words over the 8 codes, which start at
// an even byte: three, or two and the second again where they start at a
// word (never a word past the block).
uint piece_at(uint row, uint lane) { return Q8 ? row + 34u * (lane / 4u) : row + 16u * lane; }
uvec4 load_piece(uint s, uint at, uint lane) {
  if (!Q8) return pieces[s].v[at >> 4];
  const uint c = at + 2u + 8u * (lane % 4u), a = c >> 2;
  return uvec4(bufs[s].w[at >> 2], bufs[s].w[a], bufs[s].w[a + 1u], bufs[s].w[(c + 7u) >> 2]);
}

// The piece's 8 values (load_piece of the piece at `at`), first and last 4.
void piece_values(uvec4 p, uint at, out vec4 lo, out vec4 hi) {
  if (!Q8) {
    halves8(p, lo, hi);
    return;
  }
  // The block's d is the low half of its word where the block starts at a
  // multiple of 4, and then its codes start 2 bytes into p.y.
  const bool at4 = (at & 2u) == 0u;
  const float d = half_to_float(at4 ? p.x & 0xFFFFu : p.x >> 16);
  const uvec4 codes = funnel(p.yzww, p.zwww, at4 ? 16u : 0u);
  lo = d * bytes_i(codes.x);
  hi = d * bytes_i(codes.y);
}

// Output y of dim i of (token t, head h): stored, and kept for the codes.
void put_out(uint t, uint h, uint i, float y) {
  stf(t_off(T_DST) + h * t_nb(T_DST, 1u) + t * t_nb(T_DST, 2u) + 4u * i, y);
#ifdef USE_CODES
  qv[i] = y;
#endif
}

// The region in slot T_OUT0: per row (token, head) and split D + 2 words: max,
// sum, the D unnormalized outputs. Slot T_OUT1: a count per row.
uint partial(uint row, uint split, uint SPLITS, uint D) {
  return (t_off(T_OUT0) >> 2) + (row * SPLITS + split) * (D + 2u);
}

// Dim i of row `row` from its `runs` partial results: each run's output and
// sum rescaled to the largest max (a run whose every position is masked adds
// nothing), as the chunks of one run are (Dao et al., "FlashAttention", 2022).
float merge(uint row, uint runs, uint SPLITS, uint D, uint i) {
  float mx = neg_inf();
  for (uint s = 0u; s < runs; ++s) mx = max(mx, uintBitsToFloat(parts[0].w[partial(row, s, SPLITS, D)]));
  if (is_neg_inf(mx)) return 0.0;  // every position masked
  float out0 = 0.0, l = 0.0;
  for (uint s = 0u; s < runs; ++s) {
    const uint p = partial(row, s, SPLITS, D);
    const float m = uintBitsToFloat(parts[0].w[p]);
    const float f = is_neg_inf(m) ? 0.0 : exp_acc(m - mx);
    l += f * uintBitsToFloat(parts[0].w[p + 1u]);
    out0 += f * uintBitsToFloat(parts[0].w[p + 2u + i]);
  }
  return out0 * (l > 0.0 ? 1.0 / l : 0.0);
}

void main() {
  const uint D = t_ne(T_SRC0, 0u), T = t_ne(T_SRC0, 1u), H = t_ne(T_SRC0, 2u);
  const uint SPLITS = p_u(1u), o = wg_index();
  if (o >= T * H * SPLITS) return;  // uniform per workgroup
  const uint row = o % (T * H), split = o / (T * H);
  const uint L = D / 8u, P = WG / L, C = P * R;
#ifdef SCORE_LANES
  // A position's L partial dots summed across its L lanes by shuffles, with
  // no shared memory and no barrier, where L is a power of two within a
  // subgroup (lane_index(): consecutive places are consecutive lanes).
  const bool shuf = (L & (L - 1u)) == 0u && L <= gl_SubgroupSize;
  const uint i = shuf ? lane_index() : gl_LocalInvocationID.x;
#else
  const bool shuf = false;
  const uint i = gl_LocalInvocationID.x;
#endif
  const uint t = row % T, h = row / T, lane = i % L, slot = i / L;
  const bool in_use = slot < P;
  const uint n_kv = t_ne(T_SRC1, 1u), hkv = h / (H / t_ne(T_SRC1, 2u));
  // This workgroup's run of chunks: runs of `per` chunks, at least MIN_SPLIT positions each.
  const uint chunks = (n_kv + C - 1u) / C;
  const uint want = clamp((n_kv + MIN_SPLIT - 1u) / MIN_SPLIT, 1u, SPLITS);
  const uint per = (chunks + want - 1u) / want, runs = (chunks + per - 1u) / per;
  if (split >= runs) return;  // uniform per workgroup
  const uint begin = split * per * C, end = min(begin + per * C, n_kv);
  const uint qa = t_off(T_SRC0) + t * t_nb(T_SRC0, 1u) + h * t_nb(T_SRC0, 2u) + 32u * lane;
  const vec4 q0 = vec4(ldf(T_SRC0, qa), ldf(T_SRC0, qa + 4u), ldf(T_SRC0, qa + 8u),
                       ldf(T_SRC0, qa + 12u));
  const vec4 q1 = vec4(ldf(T_SRC0, qa + 16u), ldf(T_SRC0, qa + 20u), ldf(T_SRC0, qa + 24u),
                       ldf(T_SRC0, qa + 28u));
  const bool masked = p_u(0u) != 0u;
  const uint mrow = masked ? (t_off(T_SRC3) + t * t_nb(T_SRC3, 1u)) >> 2 : 0u;
  const uint kb = piece_at(t_off(T_SRC1) + hkv * t_nb(T_SRC1, 2u), lane), knb = t_nb(T_SRC1, 1u);
  const uint vb = piece_at(t_off(T_SRC2) + hkv * t_nb(T_SRC2, 2u), lane), vnb = t_nb(T_SRC2, 1u);
  const float scale = p_f(0u), NEG_INF = neg_inf();

  float m = NEG_INF, lsum = 0.0;
  vec4 acc0 = vec4(0.0), acc1 = vec4(0.0);
  for (uint j0 = begin; j0 < end; j0 += C) {
    // 1. Loads at clamped positions, so that none waits on a branch.
    uvec4 kp[R], vp[R];
    uint kat[R], vat[R];
    float mk[R];
    [[unroll]] for (uint r = 0u; r < R; ++r) {
      const uint j = min(j0 + slot + r * P, end - 1u);
      kat[r] = kb + j * knb;
      vat[r] = vb + j * vnb;
      kp[r] = load_piece(T_SRC1, kat[r], lane);
      vp[r] = load_piece(T_SRC2, vat[r], lane);
      mk[r] = masked ? uintBitsToFloat(bufs[T_SRC3].w[mrow + j]) : 0.0;
    }
    // 2. Scores: lane 0 adds the mask, so that a masked position sums to -inf.
    float sc[R];  // with shuf: the scores of this invocation's R positions
    float score = NEG_INF;
#ifdef SCORE_LANES
    if (shuf) {  // uniform
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        vec4 lo, hi;
        piece_values(kp[r], kat[r], lo, hi);
        float d = dot(q0, lo) + dot(q1, hi);
        for (uint x = 1u; x < L; x <<= 1u) d += subgroupShuffleXor(d, x);
        sc[r] = j0 + slot + r * P < end ? scale * d + mk[r] : NEG_INF;
        score = max(score, sc[r]);
      }
    } else
#endif
    {
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const uint c = slot + r * P;
        if (in_use) {
          vec4 lo, hi;
          piece_values(kp[r], kat[r], lo, hi);
          const float d = dot(q0, lo) + dot(q1, hi);
          const bool live = j0 + c < end;
          red[c * L + lane] = !live ? NEG_INF : scale * d + (lane == 0u ? mk[r] : 0.0);
        }
      }
      barrier();
      if (i < C) {
        float s = 0.0;
        for (uint k = 0u; k < L; ++k) s += red[i * L + k];
        sp[i] = s;
        score = s;
      }
    }
#ifdef USE_SUBGROUP
    // 3. The chunk's max, the same in every invocation: each subgroup's,
    // then theirs (a loop over the C scores in shared memory is C dependent
    // steps in every invocation).
    score = subgroupMax(score);
    if (gl_SubgroupInvocationID == 0u) smax[gl_SubgroupID] = score;
    barrier();
    float cmax = NEG_INF;
    for (uint g = 0u; g < gl_NumSubgroups; ++g) cmax = max(cmax, smax[g]);
#else
    barrier();
    // 3. The chunk's max: the same in every invocation.
    float cmax = NEG_INF;
    for (uint k = 0u; k < C; ++k) cmax = max(cmax, sp[k]);
#endif
    const float m_new = max(m, cmax);
    if (!is_neg_inf(m_new)) {  // uniform
      const float corr = is_neg_inf(m) ? 0.0 : exp_acc(m - m_new);
      acc0 *= corr;
      acc1 *= corr;
      lsum *= corr;
      // 4. P·V over this invocation's positions.
      [[unroll]] for (uint r = 0u; r < R; ++r) {
        const float s = shuf ? sc[r] : in_use ? sp[slot + r * P] : NEG_INF;
        const float p = is_neg_inf(s) ? 0.0 : exp_acc(s - m_new);
        lsum += p;
        vec4 lo, hi;
        piece_values(vp[r], vat[r], lo, hi);
        acc0 += p * lo;
        acc1 += p * hi;
      }
      m = m_new;
    }
    barrier();  // before the next chunk overwrites red and sp
  }
  // The slots' sums: group g's dims at red[g D ..], its softmax sum at sp[g],
  // a group being a slot, or with shuf a subgroup's slots, summed first by
  // shuffles between their lanes of the same place.
  uint groups = P, g = slot;
  bool writes = in_use;
#ifdef SCORE_LANES
  if (shuf) {  // uniform
    for (uint x = L; x < gl_SubgroupSize; x <<= 1u) {
      acc0 += vec4(subgroupShuffleXor(acc0, x));
      acc1 += vec4(subgroupShuffleXor(acc1, x));
      lsum += subgroupShuffleXor(lsum, x);
    }
    groups = WG / gl_SubgroupSize;
    g = i / gl_SubgroupSize;
    writes = i % gl_SubgroupSize < L;
  }
#endif
  if (writes) {
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      red[g * D + 8u * lane + e] = acc0[e];
      red[g * D + 8u * lane + 4u + e] = acc1[e];
    }
    if (lane == 0u) sp[g] = lsum;
  }
  barrier();
  float out0 = 0.0, l = 0.0;
  if (i < D) {
    for (uint s = 0u; s < groups; ++s) {
      out0 += red[s * D + i];
      l += sp[s];
    }
  }
  if (runs == 1u) {
    if (i < D) put_out(t, h, i, out0 * (l > 0.0 ? 1.0 / l : 0.0));
  } else {
    // This run's max (the same in every invocation), sum and output, then
    // the count; the last run of the row merges them all.
    const uint p = partial(row, split, SPLITS, D);
    if (i < D) parts[0].w[p + 2u + i] = floatBitsToUint(out0);
    if (i == 0u) {
      parts[0].w[p] = floatBitsToUint(m);
      parts[0].w[p + 1u] = floatBitsToUint(l);
    }
    memoryBarrierBuffer();
    barrier();
    if (i == 0u) merging = atomicAdd(parts[1].w[(t_off(T_OUT1) >> 2) + row], 1u) == runs - 1u;
    barrier();
    if (!merging) return;  // uniform per workgroup
    memoryBarrierBuffer();
    if (i < D) put_out(t, h, i, merge(row, runs, SPLITS, D, i));
  }
#ifdef USE_CODES
  store_codes(t, h, H, D);
#endif
}
