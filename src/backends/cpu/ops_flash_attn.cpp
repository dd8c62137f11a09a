// FLASH_ATTN: softmax(scale * q k^T + mask) v in one pass over the KV cache
// with the online softmax of Milakov & Gimelshein 2018 (as FlashAttention, Dao
// et al. 2022), never materialising the score matrix. GQA: query head h reads
// KV head h / (H / Hkv).
//
// Work unit: one KV head and a tile of query tokens. Its R = group x tile query
// rows (all query heads of the KV head, for each token of the tile) are the
// vector lanes: q is packed transposed, [D][R], so the scores of one KV position
// for all R rows are one vector built with D broadcast-multiply-adds and no
// horizontal sums, and the running max, sum and rescale factor of the online
// softmax are per-lane too. KV positions go kBlock at a time (independent FMA
// chains); each K/V row of a block is converted to F32 once per unit, and a
// block the mask hides from every row of the unit is skipped unread.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/tensor_rows.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant_blocks.hpp"

// clang-format off
// Highway's per-target compilation needs this order.
// Arrays of vectors below: not possible with the sizeless vectors of SVE/RVV.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV)
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/ops_flash_attn.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "backends/cpu/simd/row_convert-inl.h"
// clang-format on

#ifndef POLYINFER_CPU_FLASH_ATTN_SHARED
#define POLYINFER_CPU_FLASH_ATTN_SHARED
namespace polyinfer::cpu {
namespace {

// KV positions per step: the number of score vectors in flight.
constexpr int64_t kBlock = 8;
// Scratch regions start on cache lines (64 bytes).
constexpr int64_t kAlignFloats = 16;

int64_t align_floats(int64_t n) {
  return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

enum class BlockMask { kHidden, kOpen, kMixed };

}  // namespace
}  // namespace polyinfer::cpu
#endif

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// What one call works on, and how its query rows map to lanes.
struct Geometry {
  const pi_node& n;
  int64_t d, n_tokens, n_kv, n_kv_heads, group;
  int64_t tile;   // query tokens per unit
  int64_t lanes;  // R padded to whole vectors
};

// Tiles of about two vectors of rows: each converted K/V block then serves
// twice as many rows as with one (measured: prefill 13% faster than one).
Geometry geometry_of(const pi_node& n) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  const int64_t group = n.src[0].ne[2] / n.src[1].ne[2];
  const int64_t tile = std::max<int64_t>(1, std::min(2 * lanes / group, n.src[0].ne[1]));
  const int64_t rows = group * tile;
  return {n,
          n.src[0].ne[0],
          n.src[0].ne[1],
          n.src[1].ne[1],
          n.src[1].ne[2],
          group,
          tile,
          (rows + lanes - 1) / lanes * lanes};
}

// Per-thread scratch, in floats.
struct Scratch {
  float* qt;      // [D][lanes] scaled q, transposed
  float* kf;      // [kBlock][D] K rows as F32 (K not F32)
  float* vf;      // [kBlock][D] V rows as F32 (V not F32)
  float* p;       // [kBlock][lanes] scores, then probabilities
  float* mask_t;  // [kBlock][lanes] mask of a partly hidden block
  float* m;       // [lanes] running max
  float* l;       // [lanes] running sum
  float* corr;    // [lanes] rescale factor of the last block
  float* o;       // [lanes][D] unnormalised output rows
};

int64_t scratch_floats(const Geometry& g) {
  return 2 * align_floats(g.d * g.lanes) + 2 * align_floats(kBlock * g.d) +
         2 * align_floats(kBlock * g.lanes) + 3 * align_floats(g.lanes);
}

Scratch scratch_for(const Geometry& g, float* base) {
  Scratch s{};
  float** regions[] = {&s.qt, &s.kf, &s.vf, &s.p, &s.mask_t, &s.m, &s.l, &s.corr, &s.o};
  const int64_t sizes[] = {g.d * g.lanes,    kBlock * g.d,     kBlock * g.d,
                           kBlock * g.lanes, kBlock * g.lanes, g.lanes,
                           g.lanes,          g.lanes,          g.d * g.lanes};
  for (size_t i = 0; i < std::size(regions); ++i) {
    *regions[i] = base;
    base += align_floats(sizes[i]);
  }
  return s;
}

// The unit's query rows: lane r is token t0 + r / group, query head
// kvh * group + r % group.
struct Unit {
  int64_t kvh, t0, n_tok, rows;
};

void pack_queries(const Geometry& g, const Unit& u, const Scratch& s) {
  const pi_tensor& q = g.n.src[0];
  const float scale = g.n.f[0];
  std::fill(s.qt, s.qt + g.d * g.lanes, 0.0f);
  for (int64_t r = 0; r < u.rows; ++r) {
    const float* row = row_f32(q, {u.t0 + r / g.group, u.kvh * g.group + r % g.group, 0});
    for (int64_t i = 0; i < g.d; ++i) s.qt[i * g.lanes + r] = row[i] * scale;
  }
}

// Folds positions [0, nb) of a mask row into "some position is visible" and
// "every position is 0".
void scan_mask(const float* row, int64_t nb, bool& any_visible, bool& all_zero) {
  const hn::CappedTag<float, kBlock> dm;
  const auto neg_inf = hn::Set(dm, -std::numeric_limits<float>::infinity());
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dm));
  int64_t j = 0;
  for (; j + lanes <= nb; j += lanes) {
    const auto v = hn::LoadU(dm, row + j);
    any_visible |= !hn::AllTrue(dm, hn::Eq(v, neg_inf));
    all_zero &= hn::AllTrue(dm, hn::Eq(v, hn::Zero(dm)));
  }
  for (; j < nb; ++j) {
    any_visible |= row[j] != -std::numeric_limits<float>::infinity();
    all_zero &= row[j] == 0.0f;
  }
}

// How the mask treats positions [j0, j0 + nb) for the unit's tokens; for a
// mixed block also writes the mask per position and lane into s.mask_t.
BlockMask classify_block(const Geometry& g, const Unit& u, const Scratch& s, int64_t j0,
                         int64_t nb) {
  if (!present(g.n.src[3])) return BlockMask::kOpen;
  const uint64_t stride = g.n.src[3].nb[1];
  const uint8_t* first = reinterpret_cast<const uint8_t*>(row_f32(g.n.src[3], {u.t0, 0, 0}) + j0);
  bool any_visible = false, all_zero = true;
  for (int64_t t = 0; t < u.n_tok; ++t) {
    scan_mask(reinterpret_cast<const float*>(first + t * stride), nb, any_visible, all_zero);
  }
  if (!any_visible) return BlockMask::kHidden;
  if (all_zero) return BlockMask::kOpen;
  std::fill(s.mask_t, s.mask_t + kBlock * g.lanes, 0.0f);
  for (int64_t r = 0; r < u.rows; ++r) {
    const float* row = reinterpret_cast<const float*>(first + r / g.group * stride);
    for (int64_t j = 0; j < nb; ++j) s.mask_t[j * g.lanes + r] = row[j];
  }
  return BlockMask::kMixed;
}

// Row p of K or V (head kvh) as F32: the tensor's own row when it is F32,
// else converted into `buf`.
const float* kv_row(const pi_tensor& t, int64_t p, int64_t kvh, float* buf, int64_t d) {
  const uint8_t* row = row_ptr(t, p, kvh, 0);
  switch (t.type) {
    case kTypeF32:
      return reinterpret_cast<const float*>(row);
    case kTypeF16:
      F16ToF32Row(reinterpret_cast<const uint16_t*>(row), buf, d);
      return buf;
    default:
      Q8_0ToF32Row(reinterpret_cast<const BlockQ8_0*>(row), buf, d);
      return buf;
  }
}

// Scores of kBlock positions for one vector of lanes, then the online softmax
// step: p[j] = exp(score - new max), running sum and max updated, corr = the
// factor that rescales what was accumulated before. Positions >= nb are dead.
void softmax_block(const Geometry& g, const Scratch& s, const float* const* k, int64_t nb,
                   BlockMask mask, int64_t lane0) {
  const DF df;
  const VF neg_inf = hn::Set(df, -std::numeric_limits<float>::infinity());
  VF sc[kBlock];
  for (int64_t j = 0; j < kBlock; ++j) sc[j] = hn::Zero(df);
  for (int64_t i = 0; i < g.d; ++i) {
    const VF qv = hn::LoadU(df, s.qt + i * g.lanes + lane0);
    for (int64_t j = 0; j < kBlock; ++j) sc[j] = hn::MulAdd(hn::Set(df, k[j][i]), qv, sc[j]);
  }
  VF block_max = neg_inf;
  for (int64_t j = 0; j < kBlock; ++j) {
    if (mask == BlockMask::kMixed && j < nb) {
      sc[j] = hn::Add(sc[j], hn::LoadU(df, s.mask_t + j * g.lanes + lane0));
    }
    if (j >= nb) sc[j] = neg_inf;
    block_max = hn::Max(block_max, sc[j]);
  }
  // -inf (a hidden position; a lane with nothing visible yet) is kept out of
  // Exp, whose valid range ends at -FLT_MAX: its weight is 0 by definition.
  const VF m_old = hn::LoadU(df, s.m + lane0);
  const VF m_new = hn::Max(m_old, block_max);
  const VF corr = hn::IfThenZeroElse(hn::Eq(m_old, neg_inf), hn::Exp(df, hn::Sub(m_old, m_new)));
  VF sum = hn::Mul(hn::LoadU(df, s.l + lane0), corr);
  for (int64_t j = 0; j < kBlock; ++j) {
    const VF p = hn::IfThenZeroElse(hn::Eq(sc[j], neg_inf), hn::Exp(df, hn::Sub(sc[j], m_new)));
    sum = hn::Add(sum, p);
    hn::StoreU(p, df, s.p + j * g.lanes + lane0);
  }
  hn::StoreU(m_new, df, s.m + lane0);
  hn::StoreU(sum, df, s.l + lane0);
  hn::StoreU(corr, df, s.corr + lane0);
}

// o[r] = o[r] * corr[r] + Σ_j p[j][r] v[j] for kRows rows from r0, over the
// whole vectors of D; the elements past them (D not a multiple of the vector)
// in accumulate_tail.
template <int kRows>
void accumulate_rows(const Geometry& g, const Scratch& s, const float* const* v, int64_t nb,
                     int64_t r0) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t i = 0; i + lanes <= g.d; i += lanes) {
    VF acc[kRows];
    for (int r = 0; r < kRows; ++r) {
      acc[r] = hn::Mul(hn::LoadU(df, s.o + (r0 + r) * g.d + i), hn::Set(df, s.corr[r0 + r]));
    }
    for (int64_t j = 0; j < nb; ++j) {
      const VF vv = hn::LoadU(df, v[j] + i);
      for (int r = 0; r < kRows; ++r) {
        acc[r] = hn::MulAdd(hn::Set(df, s.p[j * g.lanes + r0 + r]), vv, acc[r]);
      }
    }
    for (int r = 0; r < kRows; ++r) hn::StoreU(acc[r], df, s.o + (r0 + r) * g.d + i);
  }
}

void accumulate_tail(const Geometry& g, const Scratch& s, const float* const* v, int64_t nb,
                     int64_t rows) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = g.d / lanes * lanes; i < g.d; ++i) {
      float acc = s.o[r * g.d + i] * s.corr[r];
      for (int64_t j = 0; j < nb; ++j) acc += s.p[j * g.lanes + r] * v[j][i];
      s.o[r * g.d + i] = acc;
    }
  }
}

void accumulate(const Geometry& g, const Scratch& s, const float* const* v, int64_t nb,
                int64_t rows) {
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) accumulate_rows<8>(g, s, v, nb, r);
  for (; r + 4 <= rows; r += 4) accumulate_rows<4>(g, s, v, nb, r);
  for (; r < rows; ++r) accumulate_rows<1>(g, s, v, nb, r);
  accumulate_tail(g, s, v, nb, rows);
}

// Output rows o / l; 0 for a row that saw no visible position.
void store_output(const Geometry& g, const Unit& u, const Scratch& s) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t r = 0; r < u.rows; ++r) {
    float* out = row_f32(g.n.dst, {u.kvh * g.group + r % g.group, u.t0 + r / g.group, 0});
    const float inv = s.l[r] > 0 ? 1.0f / s.l[r] : 0.0f;
    const VF vinv = hn::Set(df, inv);
    int64_t i = 0;
    for (; i + lanes <= g.d; i += lanes) {
      hn::StoreU(hn::Mul(hn::LoadU(df, s.o + r * g.d + i), vinv), df, out + i);
    }
    for (; i < g.d; ++i) out[i] = s.o[r * g.d + i] * inv;
  }
}

void attend(const Geometry& g, const Unit& u, const Scratch& s) {
  const pi_tensor &k = g.n.src[1], &v = g.n.src[2];
  pack_queries(g, u, s);
  std::fill(s.m, s.m + g.lanes, -std::numeric_limits<float>::infinity());
  std::fill(s.l, s.l + g.lanes, 0.0f);
  std::fill(s.o, s.o + g.lanes * g.d, 0.0f);
  const float* krows[kBlock];
  const float* vrows[kBlock];
  for (int64_t j0 = 0; j0 < g.n_kv; j0 += kBlock) {
    const int64_t nb = std::min(kBlock, g.n_kv - j0);
    const BlockMask mask = classify_block(g, u, s, j0, nb);
    if (mask == BlockMask::kHidden) continue;
    for (int64_t j = 0; j < kBlock; ++j) {
      // Dead positions (j >= nb) reuse row 0: read, never counted.
      krows[j] = j < nb ? kv_row(k, j0 + j, u.kvh, s.kf + j * g.d, g.d) : krows[0];
      vrows[j] = j < nb ? kv_row(v, j0 + j, u.kvh, s.vf + j * g.d, g.d) : vrows[0];
    }
    for (int64_t lane0 = 0; lane0 < g.lanes; lane0 += static_cast<int64_t>(hn::Lanes(DF()))) {
      softmax_block(g, s, krows, nb, mask, lane0);
    }
    accumulate(g, s, vrows, nb, u.rows);
  }
  store_output(g, u, s);
}

}  // namespace

size_t FlashAttnWorkSize(const pi_node& n, int nth) {
  return static_cast<size_t>(scratch_floats(geometry_of(n))) * sizeof(float) * nth;
}

// Units (token tile, KV head) go round-robin over the threads: with a causal
// mask later tiles cost more, and interleaving evens that out.
void FlashAttnRun(const OpContext& ctx) {
  const Geometry g = geometry_of(ctx.node);
  float* base = reinterpret_cast<float*>(ctx.work.data()) + scratch_floats(g) * ctx.ith;
  const Scratch s = scratch_for(g, base);
  const int64_t n_tiles = (g.n_tokens + g.tile - 1) / g.tile;
  for (int64_t unit = ctx.ith; unit < n_tiles * g.n_kv_heads; unit += ctx.nth) {
    const int64_t t0 = unit / g.n_kv_heads * g.tile;
    const int64_t n_tok = std::min(g.tile, g.n_tokens - t0);
    attend(g, {unit % g.n_kv_heads, t0, n_tok, n_tok * g.group}, s);
  }
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {
namespace {

HWY_EXPORT(FlashAttnWorkSize);
HWY_EXPORT(FlashAttnRun);

bool kv_type_ok(const pi_tensor& t) {
  if (t.type != kTypeF32 && t.type != kTypeF16 && t.type != kTypeQ8_0) return false;
  const TypeTraits& tt = traits(static_cast<GgmlType>(t.type));
  return t.nb[0] == tt.type_size && t.ne[0] % tt.block_size == 0;
}

bool supports_flash_attn(const pi_node& n) {
  const pi_tensor &q = n.src[0], &k = n.src[1], &v = n.src[2], &m = n.src[3], &o = n.dst;
  const int64_t d = q.ne[0], t = q.ne[1], h = q.ne[2];
  if (!is_f32_rows(q) || !kv_type_ok(k) || !kv_type_ok(v) || !is_f32_rows(o)) return false;
  if (k.ne[0] != d || v.ne[0] != d || v.ne[1] != k.ne[1] || v.ne[2] != k.ne[2]) return false;
  if (k.ne[2] <= 0 || h % k.ne[2] != 0 || q.ne[3] != 1 || k.ne[3] != 1) return false;
  if (o.ne[0] != d || o.ne[1] != h || o.ne[2] != t) return false;
  return !present(m) || (is_f32_rows(m) && m.ne[0] == k.ne[1] && m.ne[1] >= t);
}

size_t flash_attn_work(const pi_node& n, int nth) {
  return HWY_DYNAMIC_DISPATCH(FlashAttnWorkSize)(n, nth);
}

void run_flash_attn(const OpContext& ctx) {
  HWY_DYNAMIC_DISPATCH(FlashAttnRun)(ctx);
}

}  // namespace

const OpImpl kOpFlashAttn{supports_flash_attn, flash_attn_work, run_flash_attn};

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
