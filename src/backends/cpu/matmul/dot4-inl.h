// Per-target (Highway foreach_target) int8 dot product of the quantized GEMM
// kernels. Dot4 treats each int32 lane as 4 bytes:
//   acc[i] += u[4i]*s[4i] + u[4i+1]*s[4i+1] + u[4i+2]*s[4i+2] + u[4i+3]*s[4i+3]
// with u unsigned (weight codes, 0..255) and s signed (activation codes), in
// exact int32 arithmetic: what AVX512-VNNI's vpdpbusd does in one instruction
// (used on AVX3_DL). Other x86 targets use pmaddubsw + pmaddwd where the codes
// allow (<= 127), else widen the bytes to int16 (pmaddwd); other
// architectures widen to int32. The u operand is prepared once
// (PrepareU8<max code>) because kernels reuse it across columns.

#if defined(POLYINFER_MATMUL_DOT4_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_MATMUL_DOT4_INL_H_
#undef POLYINFER_MATMUL_DOT4_INL_H_
#else
#define POLYINFER_MATMUL_DOT4_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL
// Highway's AVX3_DL target string names AVX-VNNI (VEX) but not AVX512-VNNI,
// which vpdpbusd on zmm needs; every AVX3_DL CPU has it (Highway's run-time
// check requires it).
#pragma GCC target("avx512vnni")
#endif
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
// No 4-byte lanes in one-lane vectors: the engines use scalar loops instead.
#elif HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL

template <class DI32>
struct U8Operand {
  hn::Vec<hn::Repartition<uint8_t, DI32>> bytes;
};

template <int kMaxCode, class DI32>
HWY_INLINE U8Operand<DI32> PrepareU8(DI32 /*di*/, hn::Vec<hn::Repartition<uint8_t, DI32>> u) {
  return {u};
}

HWY_INLINE hn::Vec512<int32_t> Dot4(hn::Full512<int32_t> /*di*/, hn::Vec512<int32_t> acc,
                                    const U8Operand<hn::Full512<int32_t>>& u,
                                    hn::Vec512<int8_t> s) {
  return hn::Vec512<int32_t>{_mm512_dpbusd_epi32(acc.raw, u.bytes.raw, s.raw)};
}

#elif HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128  // EMU128 (clang) has no __m128i

// Codes up to 127 (all types but Q8_0): pmaddubsw multiplies u8 by s8 and
// adds pairs into int16 without saturating (2 * 127 * 128 < 32768), then
// pmaddwd by 1 adds the pairs of pairs into int32.
template <class DI32>
struct U8Bytes {
  hn::Vec<hn::Repartition<uint8_t, DI32>> bytes;
};
// Larger codes: bytes 2j and 2j+1 widened to int16, multiplied by pmaddwd.
template <class DI32>
struct U8Pairs {
  hn::Vec<hn::Repartition<int16_t, DI32>> even, odd;
};

template <int kMaxCode, class DI32>
HWY_INLINE auto PrepareU8(DI32 /*di*/, hn::Vec<hn::Repartition<uint8_t, DI32>> u) {
  if constexpr (kMaxCode <= 127) {
    return U8Bytes<DI32>{u};
  } else {
    const hn::Repartition<uint16_t, DI32> du16;
    const hn::Repartition<int16_t, DI32> di16;
    const auto w = hn::BitCast(du16, u);
    return U8Pairs<DI32>{hn::BitCast(di16, hn::And(w, hn::Set(du16, 0xFF))),
                         hn::BitCast(di16, hn::ShiftRight<8>(w))};
  }
}

HWY_INLINE hn::Vec128<int32_t> QuadSums(hn::Vec128<uint8_t> u, hn::Vec128<int8_t> s) {
  return hn::Vec128<int32_t>{_mm_madd_epi16(_mm_maddubs_epi16(u.raw, s.raw), _mm_set1_epi16(1))};
}
#if HWY_TARGET <= HWY_AVX2
HWY_INLINE hn::Vec256<int32_t> QuadSums(hn::Vec256<uint8_t> u, hn::Vec256<int8_t> s) {
  return hn::Vec256<int32_t>{
      _mm256_madd_epi16(_mm256_maddubs_epi16(u.raw, s.raw), _mm256_set1_epi16(1))};
}
#endif
#if HWY_TARGET <= HWY_AVX3
HWY_INLINE hn::Vec512<int32_t> QuadSums(hn::Vec512<uint8_t> u, hn::Vec512<int8_t> s) {
  return hn::Vec512<int32_t>{
      _mm512_madd_epi16(_mm512_maddubs_epi16(u.raw, s.raw), _mm512_set1_epi16(1))};
}
#endif

template <class DI32>
HWY_INLINE hn::Vec<DI32> Dot4(DI32 /*di*/, hn::Vec<DI32> acc, const U8Bytes<DI32>& u,
                              hn::Vec<hn::Repartition<int8_t, DI32>> s) {
  return hn::Add(acc, QuadSums(u.bytes, s));
}

// On x86 ReorderWidenMulAccumulate of int16 keeps lanes in place (int32 lane
// i gets the products of int16 lanes 2i and 2i+1, possibly split over sum0
// and sum1), so the sum of both accumulators is the 4-byte dot of lane i.
template <class DI32>
HWY_INLINE hn::Vec<DI32> Dot4(DI32 di, hn::Vec<DI32> acc, const U8Pairs<DI32>& u,
                              hn::Vec<hn::Repartition<int8_t, DI32>> s) {
  const hn::Repartition<int16_t, DI32> di16;
  const auto s16 = hn::BitCast(di16, s);
  const auto s_even = hn::ShiftRight<8>(hn::ShiftLeft<8>(s16));
  const auto s_odd = hn::ShiftRight<8>(s16);
  auto sum1 = hn::Zero(di);
  acc = hn::ReorderWidenMulAccumulate(di, u.even, s_even, acc, sum1);
  acc = hn::ReorderWidenMulAccumulate(di, u.odd, s_odd, acc, sum1);
  return hn::Add(acc, sum1);
}

#else  // other architectures: int16 products may be reordered, so widen to int32

template <class DI32>
struct U8Operand {
  hn::Vec<DI32> words;  // the 4 bytes of each lane
};

template <int kMaxCode, class DI32>
HWY_INLINE U8Operand<DI32> PrepareU8(DI32 di, hn::Vec<hn::Repartition<uint8_t, DI32>> u) {
  return {hn::BitCast(di, u)};
}

template <class DI32>
HWY_INLINE hn::Vec<DI32> Dot4(DI32 di, hn::Vec<DI32> acc, const U8Operand<DI32>& u,
                              hn::Vec<hn::Repartition<int8_t, DI32>> s) {
  const hn::RebindToUnsigned<DI32> du;
  const auto uw = hn::BitCast(du, u.words);
  const auto sw = hn::BitCast(di, s);
  const auto byte = hn::Set(du, 0xFF);
  const auto u0 = hn::BitCast(di, hn::And(uw, byte));
  const auto u1 = hn::BitCast(di, hn::And(hn::ShiftRight<8>(uw), byte));
  const auto u2 = hn::BitCast(di, hn::And(hn::ShiftRight<16>(uw), byte));
  const auto u3 = hn::BitCast(di, hn::ShiftRight<24>(uw));
  acc = hn::Add(acc, hn::Mul(u0, hn::ShiftRight<24>(hn::ShiftLeft<24>(sw))));
  acc = hn::Add(acc, hn::Mul(u1, hn::ShiftRight<24>(hn::ShiftLeft<16>(sw))));
  acc = hn::Add(acc, hn::Mul(u2, hn::ShiftRight<24>(hn::ShiftLeft<8>(sw))));
  return hn::Add(acc, hn::Mul(u3, hn::ShiftRight<24>(sw)));
}

#endif

#if HWY_TARGET != HWY_SCALAR
// The 4 activation codes at p, repeated in every lane.
template <class DI32>
HWY_INLINE hn::Vec<hn::Repartition<int8_t, DI32>> Broadcast4(DI32 di, const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return hn::BitCast(hn::Repartition<int8_t, DI32>(), hn::Set(di, v));
}
#endif

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_DOT4_INL_H_
