// Per-target (Highway foreach_target) register-blocked (prefill) path of the
// quantized GEMM, for many activation columns.
//
// Weights: a tile of rows is repacked into panels of P rows (P = int32
// lanes): one vector holds the 4 codes of elements 4i..4i+3 of each of the P
// rows, beside per-group scale/min vectors. Activations: groups of NC columns
// are interleaved likewise (4 codes of each column side by side, then the
// per-group code sums and per-block scales), once per call. The kernel then
// multiplies each panel vector (Dot4) by the broadcast 4 codes of each of the
// NC columns: lanes are rows, so no horizontal sums, and each weight load and
// scale conversion serves NC columns. Accumulators stay in registers over all
// of k. Not built for HWY_SCALAR (4 codes per int32 lane).

#if defined(POLYINFER_MATMUL_QUANT_PANEL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_MATMUL_QUANT_PANEL_INL_H_
#undef POLYINFER_MATMUL_QUANT_PANEL_INL_H_
#else
#define POLYINFER_MATMUL_QUANT_PANEL_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/dot4-inl.h"
#include "backends/cpu/matmul/thread_scratch.hpp"
#include "backends/cpu/matmul/weight_formats-inl.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL
#pragma GCC target("avx512vnni")  // see dot4-inl.h
#endif
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

// Columns per activation group; more vector registers allow more.
inline constexpr int kPanelCols = HWY_MAX_BYTES >= 64 ? 8 : 4;
// Repacked weight bytes per row tile: a few hundred KiB stay in L2.
inline constexpr size_t kTileCodeBytes = 256 * 1024;

// Byte offsets inside one activation group of kPanelCols columns over k:
//   q4[k/4][NC]   int32: codes e..e+3 of each column
//   init[k/G][NC] int32: -kOffset * code sum of each group (types with an offset)
//   gsum[k/G][NC] float: code sum of each group (types with a min; times the
//                 block scale for the 32-element types, whose group is the block)
//   d[k/B][NC]    float: block scales
template <class W>
struct ActPanelLayout {
  size_t q4, init, gsum, d, bytes;
  explicit ActPanelLayout(int64_t k) {
    const size_t groups = static_cast<size_t>(k / W::kGroup) * kPanelCols * 4;
    q4 = 0;
    init = static_cast<size_t>(k) * kPanelCols;
    gsum = init + (W::kOffset ? groups : 0);
    d = gsum + (W::kHasMin ? groups : 0);
    bytes = (d + static_cast<size_t>(k / W::kActBlock) * kPanelCols * 4 + 63) / 64 * 64;
  }
};

// Interleaves activation rows rows[0..n) (n <= kPanelCols; missing columns
// are zero) into one group at out.
template <class W>
void BuildActPanel(const ActRow* rows, int n, int64_t k, const ActPanelLayout<W>& l, uint8_t* out) {
  constexpr int NC = kPanelCols, G = W::kGroup, B = W::kActBlock;
  std::memset(out, 0, l.bytes);
  auto* q4 = reinterpret_cast<int32_t*>(out + l.q4);
  auto* init = reinterpret_cast<int32_t*>(out + l.init);
  auto* gsum = reinterpret_cast<float*>(out + l.gsum);
  auto* d = reinterpret_cast<float*>(out + l.d);
  for (int c = 0; c < n; ++c) {
    const ActRow& a = rows[c];
    for (int64_t i = 0; i < k / 4; ++i) std::memcpy(q4 + i * NC + c, a.qs + 4 * i, 4);
    const int32_t* isum = G == 16 ? a.isum16 : a.isum32;
    const float* fsum = G == 16 ? a.fsum16 : a.fsum32;
    for (int64_t g = 0; g < k / G; ++g) {
      if constexpr (W::kOffset != 0) init[g * NC + c] = -W::kOffset * isum[g];
      if constexpr (W::kHasMin) gsum[g * NC + c] = B == G ? fsum[g] * a.d[g] : fsum[g];
    }
    for (int64_t b = 0; b < k / B; ++b) d[b * NC + c] = a.d[b];
  }
}

// Byte offsets inside one weight panel of P rows over k: codes[k/4][P]
// (int32 units), then scale[k/G][P] and min[k/G][P] floats.
struct WeightPanelLayout {
  size_t scale, min, bytes;
  WeightPanelLayout(int64_t k, int group, size_t P) {
    scale = static_cast<size_t>(k) * P;
    min = scale + static_cast<size_t>(k / group) * P * 4;
    bytes = min + static_cast<size_t>(k / group) * P * 4;
  }
};

// Repacks rows [0, rows) (rows <= P; the rest of the panel is zero) of W.
template <class W>
void RepackPanel(const uint8_t* w, size_t w_stride, int64_t rows, int64_t k, size_t P,
                 const WeightPanelLayout& l, uint8_t* out) {
  constexpr int64_t kGroupsPerBlock = W::kBlock / W::kGroup;
  if (rows < static_cast<int64_t>(P)) std::memset(out, 0, l.bytes);
  auto* scale = reinterpret_cast<float*>(out + l.scale);
  auto* min = reinterpret_cast<float*>(out + l.min);
  HWY_ALIGN uint8_t codes[W::kBlock];
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = w + r * w_stride;
    for (int64_t b = 0; b < k / W::kBlock; ++b) {
      const size_t g0 = static_cast<size_t>(b * kGroupsPerBlock) * P + static_cast<size_t>(r);
      W::Unpack(row + b * sizeof(typename W::Block), codes, scale + g0, min + g0, P);
      uint8_t* dst = out + (static_cast<size_t>(b * W::kBlock / 4) * P + r) * 4;
      for (int j = 0; j < W::kBlock / 4; ++j) std::memcpy(dst + j * P * 4, codes + 4 * j, 4);
    }
  }
}

// Rows of one weight panel times the kPanelCols columns of one activation
// group; out[c][0..P) receives column c.
template <class W>
HWY_INLINE void PanelKernel(const uint8_t* wp, const WeightPanelLayout& wl, const uint8_t* ap,
                            const ActPanelLayout<W>& al, int64_t k,
                            hn::Vec<hn::ScalableTag<float>>* out) {
  constexpr int NC = kPanelCols, G = W::kGroup, B = W::kActBlock;
  const hn::ScalableTag<int32_t> di;
  const hn::RebindToFloat<decltype(di)> df;
  const hn::Repartition<uint8_t, decltype(di)> du8;
  const size_t P = hn::Lanes(di);
  const auto* scale = reinterpret_cast<const float*>(wp + wl.scale);
  const auto* min = reinterpret_cast<const float*>(wp + wl.min);
  const auto* q4 = reinterpret_cast<const int32_t*>(ap + al.q4);
  const auto* init = reinterpret_cast<const int32_t*>(ap + al.init);
  const auto* gsum = reinterpret_cast<const float*>(ap + al.gsum);
  const auto* d = reinterpret_cast<const float*>(ap + al.d);
  const hn::Repartition<int8_t, decltype(di)> di8;
  hn::Vec<decltype(df)> acc[NC];
  for (int c = 0; c < NC; ++c) acc[c] = hn::Zero(df);
  for (int64_t b = 0; b < k / B; ++b) {
    hn::Vec<decltype(df)> blk[NC];
    for (int c = 0; c < NC; ++c) blk[c] = hn::Zero(df);
    for (int j = 0; j < B / G; ++j) {  // constant trip counts: fully unrolled
      const int64_t g = b * (B / G) + j;
      hn::Vec<decltype(di)> dot[NC];
      for (int c = 0; c < NC; ++c) {
        dot[c] = W::kOffset ? hn::Set(di, init[g * NC + c]) : hn::Zero(di);
      }
      const uint8_t* wg = wp + g * (G / 4) * P * 4;
      const int32_t* ag = q4 + g * (G / 4) * NC;
      for (int i = 0; i < G / 4; ++i) {
        const auto wv = PrepareU8<W::kMaxCode>(di, hn::Load(du8, wg + i * P * 4));
        for (int c = 0; c < NC; ++c) {
          dot[c] = Dot4(di, dot[c], wv, hn::BitCast(di8, hn::Set(di, ag[i * NC + c])));
        }
      }
      const auto sc = hn::Load(df, scale + g * P);
      for (int c = 0; c < NC; ++c) blk[c] = hn::MulAdd(hn::ConvertTo(df, dot[c]), sc, blk[c]);
      if constexpr (W::kHasMin) {
        const auto mn = hn::Load(df, min + g * P);
        // Legacy types fold the block scale into gsum: added after the scaling.
        auto* sum_into = B == G ? acc : blk;
        for (int c = 0; c < NC; ++c) {
          sum_into[c] = hn::MulAdd(mn, hn::Set(df, gsum[g * NC + c]), sum_into[c]);
        }
      }
    }
    for (int c = 0; c < NC; ++c) acc[c] = hn::MulAdd(blk[c], hn::Set(df, d[b * NC + c]), acc[c]);
  }
  for (int c = 0; c < NC; ++c) out[c] = acc[c];
}

// Stores columns [0, n) of out (rows [0, rows) of each) at dst.
template <class DF>
HWY_INLINE void StorePanel(DF df, const hn::Vec<DF>* out, int n, int64_t rows, float* dst,
                           size_t dst_stride) {
  const size_t P = hn::Lanes(df);
  for (int c = 0; c < n; ++c) {
    if (rows == static_cast<int64_t>(P)) {
      hn::StoreU(out[c], df, dst + c * dst_stride);
    } else {
      HWY_ALIGN float tmp[HWY_MAX_BYTES / 4];
      hn::Store(out[c], df, tmp);
      std::memcpy(dst + c * dst_stride, tmp, sizeof(float) * static_cast<size_t>(rows));
    }
  }
}

template <class W>
void GemmPanel(int64_t k, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  constexpr int NC = kPanelCols;
  const hn::ScalableTag<float> df;
  const size_t P = hn::Lanes(df);
  const ActLayout act_l = act_layout(k, W::kActBlock);
  const ActPanelLayout<W> al(k);
  const WeightPanelLayout wl(k, W::kGroup, P);
  const int64_t n_groups = (n_cols + NC - 1) / NC;
  uint8_t* act = thread_scratch(ScratchSlot::kActPanels, al.bytes * static_cast<size_t>(n_groups));
  for (int64_t g = 0; g < n_groups; ++g) {
    ActRow rows[NC];
    const int n = static_cast<int>(std::min<int64_t>(NC, n_cols - g * NC));
    for (int c = 0; c < n; ++c) rows[c] = act_row(a + (g * NC + c) * a_stride, act_l);
    BuildActPanel<W>(rows, n, k, al, act + g * al.bytes);
  }
  // Rows per tile: whole panels, about kTileCodeBytes of codes.
  const int64_t panel_rows = static_cast<int64_t>(P);
  const int64_t tile_rows =
      std::max<int64_t>(1, static_cast<int64_t>(kTileCodeBytes) / (k * panel_rows)) * panel_rows;
  uint8_t* tile = thread_scratch(ScratchSlot::kWeightTile,
                                 wl.bytes * static_cast<size_t>(tile_rows / panel_rows));
  hn::Vec<decltype(df)> out[NC];
  for (int64_t r0 = 0; r0 < n_rows; r0 += tile_rows) {
    const int64_t n_panels = (std::min(tile_rows, n_rows - r0) + panel_rows - 1) / panel_rows;
    for (int64_t p = 0; p < n_panels; ++p) {
      const int64_t row = r0 + p * panel_rows;
      RepackPanel<W>(w + row * w_stride, w_stride, std::min(panel_rows, n_rows - row), k, P, wl,
                     tile + p * wl.bytes);
    }
    for (int64_t g = 0; g < n_groups; ++g) {
      const int n = static_cast<int>(std::min<int64_t>(NC, n_cols - g * NC));
      for (int64_t p = 0; p < n_panels; ++p) {
        const int64_t row = r0 + p * panel_rows;
        PanelKernel<W>(tile + p * wl.bytes, wl, act + g * al.bytes, al, k, out);
        StorePanel(df, out, n, std::min(panel_rows, n_rows - row), dst + g * NC * dst_stride + row,
                   dst_stride);
      }
    }
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_QUANT_PANEL_INL_H_
