// GEMM of the float weight types (F32, F16, BF16), per Highway target.
// Weights are widened to F32 (F16C / shifts) and multiplied in F32 with F32
// accumulation. Activations: F32 rows for F32 and BF16 weights (exact
// products); for F16 weights, F16 rows (rounded to nearest even, as llama.cpp
// does for F16 models), which halves the activation bytes the matrix-vector
// product keeps in L1 beside the weight stream (with F32 activations its
// DRAM stream ran at about 70% of the rate).
//
// Few columns (matrix-vector): one weight row at a time, four accumulators
// per column, so each thread reads one sequential stream (the hardware
// prefetchers keep more of it in flight than of four interleaved rows).
// More columns: register blocks of kRowBlock weight rows x up to kColBlock
// columns, lanes along k, one horizontal sum per output at the end; F16/BF16
// rows are first widened into an F32 chunk, so each weight is converted once
// rather than once per column block.
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
// From this many columns on, register blocks (and widened F16/BF16 chunks).
inline constexpr int64_t kBlockMinCols = 4;

template <class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const float* p) {
  return hn::LoadU(df, p);
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const hwy::float16_t* p) {
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::float16_t, DF>(), p));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const hwy::bfloat16_t* p) {
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<hwy::bfloat16_t, DF>(), p));
}

HWY_INLINE float ValueF32(const float* p) {
  return *p;
}
HWY_INLINE float ValueF32(const hwy::float16_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return fp16_to_fp32(bits);
}
HWY_INLINE float ValueF32(const hwy::bfloat16_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return bf16_to_fp32(bits);
}

// out[r * CB + c] = sum over e < len of w[r][e] * a[c][e].
template <class TW, class TA, int RB, int CB>
void DotBlock(int64_t len, const TW* const* w, const TA* const* a, float* out) {
  const hn::ScalableTag<float> df;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<decltype(df)> acc[RB][CB];
  for (int r = 0; r < RB; ++r) {
    for (int c = 0; c < CB; ++c) acc[r][c] = hn::Zero(df);
  }
  int64_t e = 0;
  for (; e + n <= len; e += n) {
    hn::Vec<decltype(df)> wv[RB];
    for (int r = 0; r < RB; ++r) wv[r] = LoadF32(df, w[r] + e);
    for (int c = 0; c < CB; ++c) {
      const auto av = LoadF32(df, a[c] + e);
      for (int r = 0; r < RB; ++r) acc[r][c] = hn::MulAdd(wv[r], av, acc[r][c]);
    }
  }
  for (int r = 0; r < RB; ++r) {
    for (int c = 0; c < CB; ++c) {
      float sum = hn::GetLane(hn::SumOfLanes(df, acc[r][c]));
      for (int64_t t = e; t < len; ++t) sum += ValueF32(w[r] + t) * ValueF32(a[c] + t);
      out[r * CB + c] = sum;
    }
  }
}

// out[c] = w . a[c] over len elements, for c < CB; 4 accumulators per column.
template <class TW, class TA, int CB>
void DotRow(int64_t len, const TW* w, const TA* const* a, float* out) {
  constexpr int kUnroll = 4;
  const hn::ScalableTag<float> df;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  hn::Vec<decltype(df)> acc[kUnroll][CB];
  for (int u = 0; u < kUnroll; ++u) {
    for (int c = 0; c < CB; ++c) acc[u][c] = hn::Zero(df);
  }
  int64_t e = 0;
  for (; e + kUnroll * n <= len; e += kUnroll * n) {
    for (int u = 0; u < kUnroll; ++u) {
      const auto wv = LoadF32(df, w + e + u * n);
      for (int c = 0; c < CB; ++c)
        acc[u][c] = hn::MulAdd(wv, LoadF32(df, a[c] + e + u * n), acc[u][c]);
    }
  }
  for (; e + n <= len; e += n) {
    const auto wv = LoadF32(df, w + e);
    for (int c = 0; c < CB; ++c) acc[0][c] = hn::MulAdd(wv, LoadF32(df, a[c] + e), acc[0][c]);
  }
  for (int c = 0; c < CB; ++c) {
    const auto sum = hn::Add(hn::Add(acc[0][c], acc[1][c]), hn::Add(acc[2][c], acc[3][c]));
    float total = hn::GetLane(hn::SumOfLanes(df, sum));
    for (int64_t t = e; t < len; ++t) total += ValueF32(w + t) * ValueF32(a[c] + t);
    out[c] = total;
  }
}

// Matrix-vector: rows one after another against n_cols <= 3 columns.
template <class TW, class TA>
void GemvRows(int64_t k, const uint8_t* w, size_t w_stride, int64_t n_rows, const TA* const* a,
              int64_t n_cols, float* dst, size_t dst_stride) {
  float out[3];
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto* row = reinterpret_cast<const TW*>(w + r * w_stride);
    switch (n_cols) {
      case 1:
        DotRow<TW, TA, 1>(k, row, a, out);
        break;
      case 2:
        DotRow<TW, TA, 2>(k, row, a, out);
        break;
      default:
        DotRow<TW, TA, 3>(k, row, a, out);
        break;
    }
    for (int64_t c = 0; c < n_cols; ++c) dst[c * dst_stride + r] = out[c];
  }
}

template <class TW, class TA, int RB>
void DotColumns(int64_t len, const TW* const* w, const TA* const* a, int cols, float* out) {
  switch (cols) {
    case 1:
      return DotBlock<TW, TA, RB, 1>(len, w, a, out);
    case 2:
      return DotBlock<TW, TA, RB, 2>(len, w, a, out);
    case 3:
      if constexpr (kColBlock >= 3) return DotBlock<TW, TA, RB, 3>(len, w, a, out);
      break;
    case 4:
      if constexpr (kColBlock >= 4) return DotBlock<TW, TA, RB, 4>(len, w, a, out);
      break;
  }
}

// dst[c][r] (+)= rows w[0..n_r) . columns a[0..n_cols) over len elements.
template <class TW, class TA>
void GemmRows(int64_t len, const TW* const* w, int n_r, const TA* const* a, int64_t n_cols,
              float* dst, size_t dst_stride, bool accumulate) {
  float out[kRowBlock * kColBlock];
  for (int64_t c0 = 0; c0 < n_cols; c0 += kColBlock) {
    const int cb = static_cast<int>(std::min<int64_t>(kColBlock, n_cols - c0));
    const int rb = n_r == kRowBlock ? kRowBlock : 1;
    for (int r = 0; r < n_r; r += rb) {
      if (rb == kRowBlock) {
        DotColumns<TW, TA, kRowBlock>(len, w + r, a + c0, cb, out);
      } else {
        DotColumns<TW, TA, 1>(len, w + r, a + c0, cb, out);
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
  for (; e + lanes <= n; e += lanes) hn::StoreU(LoadF32(df, src + e), df, dst + e);
  for (; e < n; ++e) dst[e] = ValueF32(src + e);
}

// Weights of type TW, activation rows of type TA.
template <class TW, class TA>
void GemmFloat(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  constexpr int64_t kMaxCols = 64;
  const TA* cols[kMaxCols];
  if (n_cols < kBlockMinCols) {
    for (int64_t c = 0; c < n_cols; ++c) cols[c] = reinterpret_cast<const TA*>(ab + c * a_stride);
    GemvRows<TW, TA>(k, wb, w_stride, n_rows, cols, n_cols, dst, dst_stride);
    return;
  }
  const bool widen = !std::is_same_v<TW, float>;
  HWY_ALIGN float chunk[kRowBlock * kWidenChunk];
  for (int64_t c0 = 0; c0 < n_cols; c0 += kMaxCols) {
    const int64_t nc = std::min(kMaxCols, n_cols - c0);
    for (int64_t r0 = 0; r0 < n_rows; r0 += kRowBlock) {
      const int n_r = static_cast<int>(std::min<int64_t>(kRowBlock, n_rows - r0));
      const TW* rows[kRowBlock];
      for (int r = 0; r < n_r; ++r) rows[r] = reinterpret_cast<const TW*>(wb + (r0 + r) * w_stride);
      if (!widen) {
        for (int64_t c = 0; c < nc; ++c) {
          cols[c] = reinterpret_cast<const TA*>(ab + (c0 + c) * a_stride);
        }
        GemmRows(k, rows, n_r, cols, nc, dst + c0 * dst_stride + r0, dst_stride, false);
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
          cols[c] = reinterpret_cast<const TA*>(ab + (c0 + c) * a_stride) + e0;
        }
        GemmRows(len, wide, n_r, cols, nc, dst + c0 * dst_stride + r0, dst_stride, e0 > 0);
      }
    }
  }
}

// F16 rows of k activations (round to nearest even). Highway 1.0.3 emulates
// the conversion on x86 targets without F16C (SSE4 and below) without
// rounding to nearest, so those use the bit-exact scalar conversion.
void ConvertActF16(const float* x, void* y, int64_t k) {
  auto* out = static_cast<hwy::float16_t*>(y);
  int64_t e = 0;
#if !(HWY_TARGET == HWY_SCALAR || (HWY_ARCH_X86 && HWY_TARGET >= HWY_SSE4))
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (; e + lanes <= k; e += lanes)
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, x + e)), dh, out + e);
#endif
  for (; e < k; ++e) {
    const uint16_t bits = fp32_to_fp16(x[e]);
    std::memcpy(out + e, &bits, 2);
  }
}

void GemmF32(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
             float* dst, size_t ds) {
  GemmFloat<float, float>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmF16(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
             float* dst, size_t ds) {
  GemmFloat<hwy::float16_t, hwy::float16_t>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmBF16(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmFloat<hwy::bfloat16_t, float>(k, w, ws, n, a, as, m, dst, ds);
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {

HWY_EXPORT(ConvertActF16);
HWY_EXPORT(GemmF32);
HWY_EXPORT(GemmF16);
HWY_EXPORT(GemmBF16);

void convert_act_f16(const float* x, void* y, int64_t k) {
  HWY_DYNAMIC_DISPATCH(ConvertActF16)(x, y, k);
}
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
