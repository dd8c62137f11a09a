// Per-target (Highway foreach_target) GEMM engine shared by every quantized
// weight type W (weight_formats-inl.h) against int8 activation rows
// (act_rows.hpp). Per output element it computes
//   sum over activation blocks b of  d_act[b] * sum over groups g in b of
//     scale[g] * (dot(u, q)_g - kOffset * sum(q)_g) + min[g] * sum(q)_g
// with dot(u, q)_g the exact int32 dot of weight codes and activation codes.
//
// Two paths:
//  - few columns (matrix-vector, decode): each weight row is unpacked once
//    per chunk and dotted along k, lanes over k, per-group scales spread over
//    lanes with a table lookup. Memory-bound: weights are streamed once.
//  - many columns (prefill): a panel of P rows (P = int32 lanes) is repacked
//    so one vector holds 4 codes of each of P rows; each vector is then
//    multiplied (Dot4) with the 4 broadcast activation codes of NC columns.
//    Lanes are rows, so no horizontal sums, and the panel load and the scale
//    conversion are shared by NC columns.

#if defined(POLYINFER_MATMUL_QUANT_ENGINE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_MATMUL_QUANT_ENGINE_INL_H_
#undef POLYINFER_MATMUL_QUANT_ENGINE_INL_H_
#else
#define POLYINFER_MATMUL_QUANT_ENGINE_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/decode_avx3dl-inl.h"
#include "backends/cpu/matmul/dot4-inl.h"
#include "backends/cpu/matmul/weight_formats-inl.h"
#include "polyinfer/quant.hpp"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL
#pragma GCC target("avx512vnni")  // see dot4-inl.h
#endif
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Elements of k unpacked or repacked at a time: a multiple of every block
// length, small enough that a panel (P rows) stays in L1.
inline constexpr int64_t kChunk = 512;
inline constexpr size_t kMaxLanes32 = HWY_MAX_BYTES / 4;
// Below this many columns the matrix-vector path is cheaper than repacking.
inline constexpr int64_t kPanelMinCols = 4;
// Columns sharing one panel load; more registers allow more.
inline constexpr int kPanelCols = HWY_MAX_BYTES >= 64 ? 8 : 4;
// Columns sharing each repacked panel (accumulators: kColTile x P floats).
inline constexpr int64_t kColTile = 256;

// Activation code sums at the granularity of W's groups.
template <class W>
HWY_INLINE const int32_t* GroupISum(const ActRow& a) {
  return W::kGroup == 16 ? a.isum16 : a.isum32;
}
template <class W>
HWY_INLINE const float* GroupFSum(const ActRow& a) {
  return W::kGroup == 16 ? a.fsum16 : a.fsum32;
}

#if HWY_TARGET != HWY_SCALAR  // 4 codes per int32 lane need vectors of >= 4 bytes

// ---------------------------------------------------------------- decode path

// One row's chunk of unpacked weights. scale/min have a vector of slack
// because lane-spreading loads read a full vector from any group.
template <class W>
struct RowChunk {
  HWY_ALIGN uint8_t codes[kChunk];
  float scale[kChunk / W::kGroup + kMaxLanes32];
  float min[kChunk / W::kGroup + kMaxLanes32];
};

template <class W>
HWY_INLINE void UnpackRowChunk(const uint8_t* row, int64_t e0, int64_t len, RowChunk<W>& c) {
  constexpr int64_t kGroupsPerBlock = W::kBlock / W::kGroup;
  const uint8_t* block = row + e0 / W::kBlock * sizeof(typename W::Block);
  for (int64_t b = 0; b < len / W::kBlock; ++b) {
    W::Unpack(block + b * sizeof(typename W::Block), c.codes + b * W::kBlock,
              c.scale + b * kGroupsPerBlock, c.min + b * kGroupsPerBlock, 1);
  }
}

// Table indices sending lane i (codes 4i..4i+3 of a vector) to entry 4i / span.
template <class DF>
HWY_INLINE auto SpreadIndices(DF df, int span) {
  HWY_ALIGN int32_t idx[kMaxLanes32];
  for (size_t i = 0; i < hn::Lanes(df); ++i) idx[i] = static_cast<int32_t>(4 * i) / span;
  return hn::SetTableIndices(df, idx);
}

// Lanes-over-k dot of a row chunk: vectors of 4N codes; the last vector may
// cover fewer codes (a 32-element block type with 64-code vectors), its
// other lanes masked off. Reads past len stay inside the chunk buffers and
// the activation row (whose scale and sum arrays follow the codes).
template <class W>
HWY_INLINE float DotRowVectors(const RowChunk<W>& w, const ActRow& a, int64_t e0, int64_t len) {
  constexpr int G = W::kGroup, B = W::kActBlock;
  const hn::ScalableTag<int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  const hn::Repartition<uint8_t, decltype(di)> du8;
  const hn::Repartition<int8_t, decltype(di)> di8;
  const int64_t step = static_cast<int64_t>(4 * hn::Lanes(di));
  const auto group_idx = SpreadIndices(df, G);
  const auto block_idx = SpreadIndices(df, B);
  auto acc = hn::Zero(df);
  for (int64_t e = 0; e < len; e += step) {
    const auto dot = Dot4(di, hn::Zero(di), PrepareU8(di, hn::Load(du8, w.codes + e)),
                          hn::LoadU(di8, a.qs + e0 + e));
    const auto sc = hn::TableLookupLanes(hn::LoadU(df, w.scale + e / G), group_idx);
    const auto da = hn::TableLookupLanes(hn::LoadU(df, a.d + (e0 + e) / B), block_idx);
    const auto term = hn::Mul(hn::ConvertTo(df, dot), hn::Mul(sc, da));
    const auto valid = hn::FirstN(df, static_cast<size_t>(std::min(step, len - e) / 4));
    acc = hn::Add(acc, hn::IfThenElseZero(valid, term));
  }
  return hn::GetLane(hn::SumOfLanes(df, acc));
}

// Row chunk (elements e0 .. e0+len of k) dotted with one activation row.
template <class W>
float DotRowChunk(const RowChunk<W>& w, const ActRow& a, int64_t e0, int64_t len) {
  constexpr int G = W::kGroup, B = W::kActBlock;
  float sum = DotRowVectors<W>(w, a, e0, len);
  // Offset and min act on the group's code sum; applied once per group.
  const float* fsum = GroupFSum<W>(a);
  for (int64_t g = 0; g < len / G; ++g) {
    const int64_t ge = e0 + g * G;
    const float per_code = (W::kHasMin ? w.min[g] : 0.0f) - W::kOffset * w.scale[g];
    sum += per_code * fsum[ge / G] * a.d[ge / B];
  }
  return sum;
}

template <class W>
void GemmDecode(int64_t k, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* a,
                size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const ActLayout layout = act_layout(k, W::kActBlock);
  ActRow act[kPanelMinCols];
  for (int64_t c = 0; c < n_cols; ++c) act[c] = act_row(a + c * a_stride, layout);
  if constexpr (kHasFusedRowDot<W>) {
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int64_t c = 0; c < n_cols; ++c) {
        dst[c * dst_stride + r] = FusedRowDot(W{}, w + r * w_stride, k, act[c]);
      }
    }
    return;
  }
  RowChunk<W> chunk;
  for (int64_t r = 0; r < n_rows; ++r) {
    float sum[kPanelMinCols] = {};
    for (int64_t e0 = 0; e0 < k; e0 += kChunk) {
      const int64_t len = std::min(kChunk, k - e0);
      UnpackRowChunk<W>(w + r * w_stride, e0, len, chunk);
      for (int64_t c = 0; c < n_cols; ++c) sum[c] += DotRowChunk<W>(chunk, act[c], e0, len);
    }
    for (int64_t c = 0; c < n_cols; ++c) dst[c * dst_stride + r] = sum[c];
  }
}

// ----------------------------------------------------------------- panel path

// P rows x kChunk elements: codes[(e / 4) * P + r] holds the 4 codes e..e+3
// of row r; scale/min[g * P + r] the group values. Padding rows are zero.
template <class W>
struct Panel {
  HWY_ALIGN uint8_t codes[kChunk * kMaxLanes32];
  HWY_ALIGN float scale[kChunk / W::kGroup * kMaxLanes32];
  HWY_ALIGN float min[kChunk / W::kGroup * kMaxLanes32];
};

template <class W>
void RepackPanel(const uint8_t* w, size_t w_stride, int64_t rows, int64_t e0, int64_t len, size_t P,
                 Panel<W>& p) {
  constexpr int64_t kGroupsPerBlock = W::kBlock / W::kGroup;
  if (rows < static_cast<int64_t>(P)) {
    std::memset(p.codes, 0, static_cast<size_t>(len) * P);
    std::memset(p.scale, 0, sizeof(float) * static_cast<size_t>(len / W::kGroup) * P);
    std::memset(p.min, 0, sizeof(float) * static_cast<size_t>(len / W::kGroup) * P);
  }
  HWY_ALIGN uint8_t codes[W::kBlock];
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* block = w + r * w_stride + e0 / W::kBlock * sizeof(typename W::Block);
    for (int64_t b = 0; b < len / W::kBlock; ++b) {
      const size_t g0 = static_cast<size_t>(b * kGroupsPerBlock) * P + static_cast<size_t>(r);
      W::Unpack(block + b * sizeof(typename W::Block), codes, p.scale + g0, p.min + g0, P);
      uint8_t* out = p.codes + (static_cast<size_t>(b * W::kBlock / 4) * P + r) * 4;
      for (int j = 0; j < W::kBlock / 4; ++j) std::memcpy(out + j * P * 4, codes + 4 * j, 4);
    }
  }
}

// acc[c * P + r] += panel rows . activation columns act[0..NC) over the chunk.
template <class W, int NC>
HWY_INLINE void PanelColumns(const Panel<W>& p, const ActRow* act, int64_t e0, int64_t len,
                             float* acc_tile) {
  constexpr int G = W::kGroup, B = W::kActBlock;
  const hn::ScalableTag<int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  const hn::Repartition<uint8_t, decltype(di)> du8;
  const size_t P = hn::Lanes(di);
  hn::Vec<decltype(df)> acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = hn::Load(df, acc_tile + c * P);
  for (int64_t ab = 0; ab < len / B; ++ab) {
    hn::Vec<decltype(df)> blk[NC];
    for (int c = 0; c < NC; ++c) blk[c] = hn::Zero(df);
    for (int g = 0; g < B / G; ++g) {
      const int64_t eg = ab * B + g * G;  // offset in the chunk
      const int64_t ga = (e0 + eg) / G;   // group index in the activation row
      hn::Vec<decltype(di)> dot[NC];
      for (int c = 0; c < NC; ++c) {
        // The code offset enters exactly, in int32, through the group's code sum.
        dot[c] = W::kOffset ? hn::Set(di, -W::kOffset * GroupISum<W>(act[c])[ga]) : hn::Zero(di);
      }
      for (int q = 0; q < G / 4; ++q) {
        const auto wv = PrepareU8(di, hn::Load(du8, p.codes + (eg / 4 + q) * P * 4));
        for (int c = 0; c < NC; ++c) {
          dot[c] = Dot4(di, dot[c], wv, Broadcast4(di, act[c].qs + e0 + eg + 4 * q));
        }
      }
      const auto sc = hn::Load(df, p.scale + (eg / G) * P);
      for (int c = 0; c < NC; ++c) blk[c] = hn::MulAdd(hn::ConvertTo(df, dot[c]), sc, blk[c]);
      if constexpr (W::kHasMin) {
        const auto mn = hn::Load(df, p.min + (eg / G) * P);
        for (int c = 0; c < NC; ++c) {
          blk[c] = hn::MulAdd(mn, hn::Set(df, GroupFSum<W>(act[c])[ga]), blk[c]);
        }
      }
    }
    for (int c = 0; c < NC; ++c) {
      acc[c] = hn::MulAdd(blk[c], hn::Set(df, act[c].d[e0 / B + ab]), acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) hn::Store(acc[c], df, acc_tile + c * P);
}

template <class W>
void GemmPanel(int64_t k, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const hn::ScalableTag<int32_t> di;
  const size_t P = hn::Lanes(di);
  const ActLayout layout = act_layout(k, W::kActBlock);
  Panel<W> panel;
  HWY_ALIGN float acc[kColTile * kMaxLanes32];
  ActRow act[kColTile];
  for (int64_t c0 = 0; c0 < n_cols; c0 += kColTile) {
    const int64_t nc = std::min(kColTile, n_cols - c0);
    for (int64_t c = 0; c < nc; ++c) act[c] = act_row(a + (c0 + c) * a_stride, layout);
    for (int64_t r0 = 0; r0 < n_rows; r0 += static_cast<int64_t>(P)) {
      const int64_t rows = std::min(static_cast<int64_t>(P), n_rows - r0);
      std::fill(acc, acc + nc * static_cast<int64_t>(P), 0.0f);
      for (int64_t e0 = 0; e0 < k; e0 += kChunk) {
        const int64_t len = std::min(kChunk, k - e0);
        RepackPanel<W>(w + r0 * w_stride, w_stride, rows, e0, len, P, panel);
        int64_t c = 0;
        for (; c + kPanelCols <= nc; c += kPanelCols) {
          PanelColumns<W, kPanelCols>(panel, act + c, e0, len, acc + c * P);
        }
        for (; c < nc; ++c) PanelColumns<W, 1>(panel, act + c, e0, len, acc + c * P);
      }
      for (int64_t c = 0; c < nc; ++c) {
        std::memcpy(dst + (c0 + c) * dst_stride + r0, acc + c * P,
                    sizeof(float) * static_cast<size_t>(rows));
      }
    }
  }
}

template <class W>
void GemmQuant(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  if (n_cols < kPanelMinCols) {
    GemmDecode<W>(k, wb, w_stride, n_rows, ab, a_stride, n_cols, dst, dst_stride);
  } else {
    GemmPanel<W>(k, wb, w_stride, n_rows, ab, a_stride, n_cols, dst, dst_stride);
  }
}

#else  // HWY_SCALAR: CPUs without 128-bit SIMD, a correct fallback only

// Dequantized weights dotted in float with the activations as converted.
template <class W>
void GemmQuant(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const ActLayout layout = act_layout(k, W::kActBlock);
  std::vector<float> weights(static_cast<size_t>(k)), act(static_cast<size_t>(k));
  for (int64_t c = 0; c < n_cols; ++c) {
    const ActRow row = act_row(static_cast<const uint8_t*>(a) + c * a_stride, layout);
    for (int64_t e = 0; e < k; ++e) act[e] = row.d[e / W::kActBlock] * row.qs[e];
    for (int64_t r = 0; r < n_rows; ++r) {
      dequantize_row(W::kType, static_cast<const uint8_t*>(w) + r * w_stride, weights.data(), k);
      float sum = 0.0f;
      for (int64_t e = 0; e < k; ++e) sum += weights[e] * act[e];
      dst[c * dst_stride + r] = sum;
    }
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_QUANT_ENGINE_INL_H_
