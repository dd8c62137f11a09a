// GEMM of the float weight types (F32, F16, BF16) against F32 activation rows,
// per Highway target. F16/BF16 weights are widened to F32 (F16C / shifts) and
// multiplied in F32: exact products, F32 accumulation.
//
// Register blocking: kRowBlock weight rows x up to kColBlock columns, lanes
// along k, one horizontal sum per output at the end. With many columns the
// F16/BF16 rows are first widened into an F32 chunk, so each weight is
// converted once rather than once per column block.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul/gemm_float.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/cpu/matmul/kernel_entries.hpp"
#include "polyinfer/fp16.hpp"

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

inline constexpr int kRowBlock = 4;
inline constexpr int kColBlock = HWY_MAX_BYTES >= 64 ? 4 : 2;
// k elements of kRowBlock rows widened at a time (16 KiB of F32).
inline constexpr int64_t kWidenChunk = 1024;
// From this many columns on, F16/BF16 rows are widened once into a chunk.
inline constexpr int64_t kWidenMinCols = 4;

template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const float* p) {
  return hn::LoadU(df, p);
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const hwy::float16_t* p) {
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::float16_t, DF>(), p));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const hwy::bfloat16_t* p) {
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::bfloat16_t, DF>(), p));
}

HWY_INLINE float WeightValue(const float* p) {
  return *p;
}
HWY_INLINE float WeightValue(const hwy::float16_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return fp16_to_fp32(bits);
}
HWY_INLINE float WeightValue(const hwy::bfloat16_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return bf16_to_fp32(bits);
}

// out[r * CB + c] = sum over e < len of w[r][e] * a[c][e].
template <class T, int RB, int CB>
void DotBlock(int64_t len, const T* const* w, const float* const* a, float* out) {
  const hn::ScalableTag<float> df;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<decltype(df)> acc[RB][CB];
  for (int r = 0; r < RB; ++r) {
    for (int c = 0; c < CB; ++c) acc[r][c] = hn::Zero(df);
  }
  int64_t e = 0;
  for (; e + n <= len; e += n) {
    hn::Vec<decltype(df)> wv[RB];
    for (int r = 0; r < RB; ++r) wv[r] = LoadWeights(df, w[r] + e);
    for (int c = 0; c < CB; ++c) {
      const auto av = hn::LoadU(df, a[c] + e);
      for (int r = 0; r < RB; ++r) acc[r][c] = hn::MulAdd(wv[r], av, acc[r][c]);
    }
  }
  for (int r = 0; r < RB; ++r) {
    for (int c = 0; c < CB; ++c) {
      float sum = hn::GetLane(hn::SumOfLanes(df, acc[r][c]));
      for (int64_t t = e; t < len; ++t) sum += WeightValue(w[r] + t) * a[c][t];
      out[r * CB + c] = sum;
    }
  }
}

template <class T, int RB>
void DotColumns(int64_t len, const T* const* w, const float* const* a, int cols, float* out) {
  switch (cols) {
    case 1:
      return DotBlock<T, RB, 1>(len, w, a, out);
    case 2:
      return DotBlock<T, RB, 2>(len, w, a, out);
    case 3:
      if constexpr (kColBlock >= 3) return DotBlock<T, RB, 3>(len, w, a, out);
      break;
    case 4:
      if constexpr (kColBlock >= 4) return DotBlock<T, RB, 4>(len, w, a, out);
      break;
  }
}

// dst[c][r0 + r] (+)= rows w[0..n_r) . columns a[0..n_cols) over len elements.
template <class T>
void GemmRows(int64_t len, const T* const* w, int n_r, const float* const* a, int64_t n_cols,
              float* dst, size_t dst_stride, bool accumulate) {
  float out[kRowBlock * kColBlock];
  for (int64_t c0 = 0; c0 < n_cols; c0 += kColBlock) {
    const int cb = static_cast<int>(std::min<int64_t>(kColBlock, n_cols - c0));
    const int rb = n_r == kRowBlock ? kRowBlock : 1;
    for (int r = 0; r < n_r; r += rb) {
      if (rb == kRowBlock) {
        DotColumns<T, kRowBlock>(len, w + r, a + c0, cb, out);
      } else {
        DotColumns<T, 1>(len, w + r, a + c0, cb, out);
      }
      for (int i = 0; i < rb; ++i) {
        for (int c = 0; c < cb; ++c) {
          float& d = dst[(c0 + c) * dst_stride + r + i];
          d = accumulate ? d + out[i * cb + c] : out[i * cb + c];
        }
      }
    }
  }
}

// Widens n elements of a F16/BF16 row to F32.
template <class T>
void WidenRow(const T* src, int64_t n, float* dst) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t e = 0;
  for (; e + lanes <= n; e += lanes) hn::StoreU(LoadWeights(df, src + e), df, dst + e);
  for (; e < n; ++e) dst[e] = WeightValue(src + e);
}

template <class T>
void GemmFloat(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  constexpr int64_t kMaxCols = 64;
  const float* cols[kMaxCols];
  const bool widen = !std::is_same_v<T, float> && n_cols >= kWidenMinCols;
  HWY_ALIGN float chunk[kRowBlock * kWidenChunk];
  for (int64_t c0 = 0; c0 < n_cols; c0 += kMaxCols) {
    const int64_t nc = std::min(kMaxCols, n_cols - c0);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kRowBlock) {
      const int n_r = static_cast<int>(std::min<int64_t>(kRowBlock, n_rows - r0));
      const T* rows[kRowBlock];
      for (int r = 0; r < n_r; ++r) rows[r] = reinterpret_cast<const T*>(wb + (r0 + r) * w_stride);
      if (!widen) {
        for (int64_t c = 0; c < nc; ++c)
          cols[c] = reinterpret_cast<const float*>(ab + (c0 + c) * a_stride);
        GemmRows<T>(k, rows, n_r, cols, nc, dst + c0 * dst_stride + r0, dst_stride, false);
        continue;
      }
      for (int64_t e0 = 0; e0 < k; e0 += kWidenChunk) {
        const int64_t len = std::min(kWidenChunk, k - e0);
        const float* wide[kRowBlock];
        for (int r = 0; r < n_r; ++r) {
          WidenRow(rows[r] + e0, len, chunk + r * kWidenChunk);
          wide[r] = chunk + r * kWidenChunk;
        }
        for (int64_t c = 0; c < nc; ++c) {
          cols[c] = reinterpret_cast<const float*>(ab + (c0 + c) * a_stride) + e0;
        }
        GemmRows<float>(len, wide, n_r, cols, nc, dst + c0 * dst_stride + r0, dst_stride, e0 > 0);
      }
    }
  }
}

void GemmF32(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
             float* dst, size_t ds) {
  GemmFloat<float>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmF16(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
             float* dst, size_t ds) {
  GemmFloat<hwy::float16_t>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmBF16(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmFloat<hwy::bfloat16_t>(k, w, ws, n, a, as, m, dst, ds);
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {

HWY_EXPORT(GemmF32);
HWY_EXPORT(GemmF16);
HWY_EXPORT(GemmBF16);

void gemm_f32(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmF32)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_f16(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmF16)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_bf16(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmBF16)(k, w, ws, n, a, as, m, dst, ds);
}

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
