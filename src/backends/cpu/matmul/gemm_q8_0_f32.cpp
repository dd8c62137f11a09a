// Q8_0 weights against F32 activations (not 8-bit activation blocks): Q8_0 is
// the type people choose to stay close to the float model, and rounding the
// activations to 8 bits as well doubles its error — enough to flip greedy
// choices with small margins (TinyStories-656K-Q8_0 "Hello", token 14, margin
// 0.008 in float64). Products are exact (int8 codes times F32), accumulated in
// F32, so the error is only the weights' own.
//
// Used for decode (up to 3 columns), which is memory-bound, so the exact
// products cost nothing: each weight block is widened in registers and
// multiplied with every column, streaming the weights once. Prefill is
// compute-bound and keeps the int8 kernels (matmul_kernels.cpp), where F32
// FMAs would be 3.5x slower.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul/gemm_q8_0_f32.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/matmul/kernel_entries.hpp"
#include "backends/cpu/simd/row_convert-inl.h"
#include "polyinfer/quant_blocks.hpp"

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int kBlock = 32;
constexpr int kMaxDecodeCols = 3;

// One block's 32 codes as F32 vectors, times `a` (32 floats), accumulated.
template <class DF>
HWY_INLINE hn::Vec<DF> BlockDot(DF df, const int8_t* q, const float* a, hn::Vec<DF> acc) {
  const hn::Rebind<int32_t, DF> di;
  const hn::Rebind<int8_t, DF> d8;
  for (int i = 0; i < kBlock; i += static_cast<int>(hn::Lanes(df))) {
    const auto w = hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, q + i)));
    acc = hn::MulAdd(w, hn::LoadU(df, a + i), acc);
  }
  return acc;
}

// The row's block scales as F32, converted with the F16C/NEON instructions
// (a scalar F16 decode per 32 weights would cost more than the weights).
const float* RowScales(const BlockQ8_0* blocks, int64_t nb) {
  thread_local std::vector<uint16_t> bits;
  thread_local std::vector<float> scales;
  bits.resize(static_cast<size_t>(nb));
  scales.resize(static_cast<size_t>(nb));
  for (int64_t b = 0; b < nb; ++b) bits[b] = blocks[b].d;
  F16ToF32Row(bits.data(), scales.data(), nb);
  return scales.data();
}

void Decode(int64_t k, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* a,
            size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const hn::ScalableTag<float> df;
  const int64_t nb = k / kBlock;
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(w + r * w_stride);
    const float* scale = RowScales(blocks, nb);
    hn::Vec<decltype(df)> acc[kMaxDecodeCols] = {hn::Zero(df), hn::Zero(df), hn::Zero(df)};
    for (int64_t b = 0; b < nb; ++b) {
      const auto d = hn::Set(df, scale[b]);
      for (int64_t c = 0; c < n_cols; ++c) {
        const float* ac = reinterpret_cast<const float*>(a + c * a_stride) + b * kBlock;
        acc[c] = hn::MulAdd(d, BlockDot(df, blocks[b].qs, ac, hn::Zero(df)), acc[c]);
      }
    }
    for (int64_t c = 0; c < n_cols; ++c)
      dst[c * dst_stride + r] = hn::GetLane(hn::SumOfLanes(df, acc[c]));
  }
}

void GemmQ8_0F32(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                 size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  for (int64_t c0 = 0; c0 < n_cols; c0 += kMaxDecodeCols) {
    Decode(k, wp, w_stride, n_rows, ap + c0 * a_stride, a_stride,
           std::min<int64_t>(kMaxDecodeCols, n_cols - c0), dst + c0 * dst_stride, dst_stride);
  }
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {

HWY_EXPORT(GemmQ8_0F32);

void gemm_q8_0_f32(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as,
                   int64_t m, float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ8_0F32)(k, w, ws, n, a, as, m, dst, ds);
}

}  // namespace polyinfer::cpu
#endif
