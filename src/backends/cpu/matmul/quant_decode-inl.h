// Per-target (Highway foreach_target) matrix-vector (decode) path of the
// quantized GEMM: few activation columns, so each weight row is streamed once
// and dotted along k, lanes over k. Types with a fused register kernel on
// this target (decode_avx3dl-inl.h) use it; the others unpack each row chunk
// to codes and per-group scales first, then spread the scales over lanes with
// a table lookup. Not built for HWY_SCALAR (4 codes per int32 lane).

#if defined(POLYINFER_MATMUL_QUANT_DECODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_MATMUL_QUANT_DECODE_INL_H_
#undef POLYINFER_MATMUL_QUANT_DECODE_INL_H_
#else
#define POLYINFER_MATMUL_QUANT_DECODE_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/decode_avx3dl-inl.h"
#include "backends/cpu/matmul/dot4-inl.h"
#include "backends/cpu/matmul/weight_formats-inl.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL
#pragma GCC target("avx512vnni")  // see dot4-inl.h
#endif
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

// Elements of k unpacked at a time: a multiple of every block length.
inline constexpr int64_t kChunk = 512;
inline constexpr size_t kMaxLanes32 = HWY_MAX_BYTES / 4;
// The matrix-vector path serves fewer columns than this.
inline constexpr int64_t kDecodeMaxCols = 3;

// Activation code sums at the granularity of W's groups.
template <class W>
HWY_INLINE const int32_t* GroupISum(const ActRow& a) {
  return W::kGroup == 16 ? a.isum16 : a.isum32;
}
template <class W>
HWY_INLINE const float* GroupFSum(const ActRow& a) {
  return W::kGroup == 16 ? a.fsum16 : a.fsum32;
}

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

// Per-lane values of a vector of codes starting at code e: values[e / span]
// for every lane when the vector lies within one span, else spread by idx.
template <int kSpan, class DF, class Indices>
HWY_INLINE hn::Vec<DF> SpanValues(DF df, const float* values, int64_t e, const Indices& idx) {
  if constexpr (4 * hn::MaxLanes(DF()) <= kSpan) {
    return hn::Set(df, values[e / kSpan]);
  } else {
    return hn::TableLookupLanes(hn::LoadU(df, values + e / kSpan), idx);
  }
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
  const auto term = [&](int64_t e) {
    const auto dot = Dot4(di, hn::Zero(di), PrepareU8<W::kMaxCode>(di, hn::Load(du8, w.codes + e)),
                          hn::LoadU(di8, a.qs + e0 + e));
    const auto sc = SpanValues<G>(df, w.scale, e, group_idx);
    const auto da = SpanValues<B>(df, a.d, e0 + e, block_idx);
    return hn::Mul(hn::ConvertTo(df, dot), hn::Mul(sc, da));
  };
  auto acc = hn::Zero(df);
  int64_t e = 0;
  for (; e + step <= len; e += step) acc = hn::Add(acc, term(e));
  if (e < len) {
    const auto valid = hn::FirstN(df, static_cast<size_t>((len - e) / 4));
    acc = hn::Add(acc, hn::IfThenElseZero(valid, term(e)));
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
  ActRow act[kDecodeMaxCols];
  for (int64_t c = 0; c < n_cols; ++c) act[c] = act_row(a + c * a_stride, layout);
  if constexpr (kHasFusedRowDot<W>) {
    FusedGemmDecode<W>(k, w, w_stride, n_rows, act, n_cols, dst, dst_stride);
    return;
  }
  RowChunk<W> chunk;
  for (int64_t r = 0; r < n_rows; ++r) {
    float sum[kDecodeMaxCols] = {};
    for (int64_t e0 = 0; e0 < k; e0 += kChunk) {
      const int64_t len = std::min(kChunk, k - e0);
      UnpackRowChunk<W>(w + r * w_stride, e0, len, chunk);
      for (int64_t c = 0; c < n_cols; ++c) sum[c] += DotRowChunk<W>(chunk, act[c], e0, len);
    }
    for (int64_t c = 0; c < n_cols; ++c) dst[c * dst_stride + r] = sum[c];
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_QUANT_DECODE_INL_H_
