// Per-target row conversions between F32 and the KV/embedding storage types,
// for the Highway kernels of the CPU ops (include after hwy/highway.h from a
// file compiled once per target through foreach_target.h). Results are exact:
// F16 -> F32 and Q8_0 -> F32 are exact anyway, F32 -> F16 rounds to nearest
// even like polyinfer::fp32_to_fp16.
//
// Vector F16 conversion needs the hardware instructions (x86 F16C, from the
// AVX2 target on; Arm FCVT): on the other targets Highway emulates it, and its
// emulated F32 -> F16 truncates instead of rounding, so those targets use the
// scalar reference conversion.

// Highway's per-target include guard: re-included once per target.
#if defined(POLYINFER_CPU_ROW_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_CPU_ROW_CONVERT_INL_H_
#undef POLYINFER_CPU_ROW_CONVERT_INL_H_
#else
#define POLYINFER_CPU_ROW_CONVERT_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"
#include "polyinfer/fp16.hpp"
#include "polyinfer/quant_blocks.hpp"

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2) || HWY_TARGET == HWY_NEON
inline constexpr bool kHardwareF16 = true;
#else
inline constexpr bool kHardwareF16 = false;
#endif

// dst[0..n) = src[0..n) for F16 bits src.
inline void F16ToF32Row(const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n) {
  int64_t i = 0;
  if constexpr (kHardwareF16) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
    const auto* h = reinterpret_cast<const hwy::float16_t*>(src);
    for (; i + lanes <= n; i += lanes)
      hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, h + i)), df, dst + i);
  }
  for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

// dst[0..n) = F16 bits of src[0..n), rounded to nearest even.
inline void F32ToF16Row(const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst, int64_t n) {
  int64_t i = 0;
  if constexpr (kHardwareF16) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
    auto* h = reinterpret_cast<hwy::float16_t*>(dst);
    for (; i + lanes <= n; i += lanes)
      hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, src + i)), dh, h + i);
  }
  for (; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

// dst[0..n) = d·q of n/32 Q8_0 blocks (d·q is exact in float32: 11 by 8 bits).
inline void Q8_0ToF32Row(const BlockQ8_0* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n) {
  const hn::CappedTag<float, kQK8_0> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const auto d = hn::Set(df, fp16_to_fp32(src[b].d));
    for (int64_t i = 0; i < kQK8_0; i += lanes) {
      const auto q = hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, src[b].qs + i)));
      hn::StoreU(hn::Mul(d, q), df, dst + b * kQK8_0 + i);
    }
  }
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
