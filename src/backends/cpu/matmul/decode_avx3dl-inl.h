// Per-target (Highway foreach_target) fused row-dot kernels for the
// matrix-vector (decode) path on AVX3_DL (AVX-512 VBMI + VNNI): one weight
// row against one activation row (act_rows.hpp), codes unpacked in registers
// straight from the stored blocks, so each weight byte is loaded once and
// never stored. Memory-bound by design: a row streams once. Types: the
// benchmark models' Q4_0, Q8_0, Q4_K, Q6_K; other types and targets use the
// generic decode path of quant_engine-inl.h.
//
// Lane layout (vpdpbusd sums 4 bytes per int32 lane): 64 codes in natural
// element order per zmm, so the activation codes load as they are stored.
// 32-element blocks: two dpbusd results (2 blocks each, 8 lanes per block)
// are folded into one vector of 4 blocks x 4 lanes before the float work.

#if defined(POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_
#undef POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_
#else
#define POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/weight_formats-inl.h"

HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL
#pragma GCC target("avx512vnni")  // see dot4-inl.h
#endif
namespace polyinfer::cpu::HWY_NAMESPACE {

// Whether W has a fused row-dot kernel on this target.
template <class W>
inline constexpr bool kHasFusedRowDot = false;

#if HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL

template <>
inline constexpr bool kHasFusedRowDot<WeightQ4_0> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ8_0> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ4_K> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ6_K> = true;

// Bytes [0, n) of a 64-byte load.
HWY_INLINE __mmask64 FirstBytes(int n) {
  return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
}

// Folds two dpbusd results of 2 blocks each (int32 lanes 0-7: first block,
// 8-15: second) into 4 blocks x 4 lanes: lanes 4j..4j+3 sum to block j.
HWY_INLINE __m512i FoldBlockPairs(__m512i ab, __m512i cd) {
  return _mm512_add_epi32(_mm512_shuffle_i32x4(ab, cd, 0x88), _mm512_shuffle_i32x4(ab, cd, 0xDD));
}

// Per 4 blocks j: lanes 4j hold -offset * (activation code sum of block j),
// the other lanes 0, so adding it to a folded dot applies the code offset.
HWY_INLINE __m512i OffsetLanes(const int32_t* isum, int nblk, int offset) {
  const __m128i sums =
      _mm_mullo_epi32(_mm_maskz_loadu_epi32((1 << nblk) - 1, isum), _mm_set1_epi32(-offset));
  return _mm512_maskz_permutexvar_epi32(
      0x1111, _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
      _mm512_castsi128_si512(sums));
}

// Activation scales of 4 blocks spread to 4 lanes each.
HWY_INLINE __m512 BlockScaleLanes(const float* d, int nblk) {
  return _mm512_permutexvar_ps(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                               _mm512_castps128_ps512(_mm_maskz_loadu_ps((1 << nblk) - 1, d)));
}

// Contribution of Q4_0 blocks b..b+nblk-1 (nblk <= 4) of a row at w.
HWY_INLINE __m512 Q4_0Blocks(const uint8_t* w, const ActRow& a, int64_t b, int nblk) {
  // Bytes 2..17 (block A's nibbles) twice, then 20..35 (block B's) twice.
  const __m512i take = _mm512_set_epi8(35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21,
                                       20, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22,
                                       21, 20, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
                                       2, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2);
  // Second copy of each block shifted down to its high nibbles.
  const __m512i shifts = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const uint8_t* p = w + b * 18;
  const __m512i raw_ab = _mm512_maskz_loadu_epi8(FirstBytes(18 * std::min(nblk, 2)), p);
  const __m512i raw_cd = _mm512_maskz_loadu_epi8(FirstBytes(18 * std::max(nblk - 2, 0)), p + 36);
  const __m512i codes_ab =
      _mm512_and_si512(_mm512_srlv_epi64(_mm512_permutexvar_epi8(take, raw_ab), shifts), low4);
  const __m512i codes_cd =
      _mm512_and_si512(_mm512_srlv_epi64(_mm512_permutexvar_epi8(take, raw_cd), shifts), low4);
  const int8_t* q = a.qs + b * 32;
  const __m512i act_ab = _mm512_maskz_loadu_epi8(FirstBytes(32 * std::min(nblk, 2)), q);
  const __m512i act_cd = _mm512_maskz_loadu_epi8(FirstBytes(32 * std::max(nblk - 2, 0)), q + 64);
  const __m512i zero = _mm512_setzero_si512();
  __m512i dot = FoldBlockPairs(_mm512_dpbusd_epi32(zero, codes_ab, act_ab),
                               _mm512_dpbusd_epi32(zero, codes_cd, act_cd));
  dot = _mm512_add_epi32(dot, OffsetLanes(a.isum32 + b, nblk, WeightQ4_0::kOffset));
  // The f16 scales at bytes 0 and 18 of each pair: u16 lanes 0, 9 of raw_ab and raw_cd.
  const __m512i take_d = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 41, 41,
                                          41, 41, 32, 32, 32, 32, 9, 9, 9, 9, 0, 0, 0, 0);
  const __m512 dw =
      _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(raw_ab, take_d, raw_cd)));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, BlockScaleLanes(a.d + b, nblk)));
}

HWY_INLINE float FusedRowDot(WeightQ4_0, const uint8_t* w, int64_t k, const ActRow& a) {
  const int64_t nb = k / 32;
  __m512 acc = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) acc = _mm512_add_ps(acc, Q4_0Blocks(w, a, b, 4));
  if (b < nb) acc = _mm512_add_ps(acc, Q4_0Blocks(w, a, b, static_cast<int>(nb - b)));
  return _mm512_reduce_add_ps(acc);
}

// Contribution of Q8_0 blocks b..b+nblk-1 (nblk <= 4) of a row at w.
HWY_INLINE __m512 Q8_0Blocks(const uint8_t* w, const ActRow& a, int64_t b, int nblk) {
  const uint8_t* p = w + b * 34;
  __m256i qs[4];
  for (int j = 0; j < 4; ++j) {
    qs[j] = _mm256_maskz_loadu_epi8(j < nblk ? ~__mmask32{0} : 0, p + 34 * j + 2);
  }
  // int8 codes + 128 as unsigned bytes.
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i codes_ab =
      _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(qs[0]), qs[1], 1), flip);
  const __m512i codes_cd =
      _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(qs[2]), qs[3], 1), flip);
  const int8_t* q = a.qs + b * 32;
  const __m512i act_ab = _mm512_maskz_loadu_epi8(FirstBytes(32 * std::min(nblk, 2)), q);
  const __m512i act_cd = _mm512_maskz_loadu_epi8(FirstBytes(32 * std::max(nblk - 2, 0)), q + 64);
  const __m512i zero = _mm512_setzero_si512();
  __m512i dot = FoldBlockPairs(_mm512_dpbusd_epi32(zero, codes_ab, act_ab),
                               _mm512_dpbusd_epi32(zero, codes_cd, act_cd));
  dot = _mm512_add_epi32(dot, OffsetLanes(a.isum32 + b, nblk, WeightQ8_0::kOffset));
  // The f16 scales at bytes 0, 34, 68, 102: u16 lanes 0, 17, 34, 51 of 128 bytes.
  const __m512i lo = _mm512_maskz_loadu_epi8(FirstBytes(34 * nblk), p);
  const __m512i hi = _mm512_maskz_loadu_epi8(FirstBytes(std::max(34 * nblk - 64, 0)), p + 64);
  const __m512i take_d = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 51, 51,
                                          51, 51, 34, 34, 34, 34, 17, 17, 17, 17, 0, 0, 0, 0);
  const __m512 dw =
      _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(lo, take_d, hi)));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, BlockScaleLanes(a.d + b, nblk)));
}

HWY_INLINE float FusedRowDot(WeightQ8_0, const uint8_t* w, int64_t k, const ActRow& a) {
  const int64_t nb = k / 32;
  __m512 acc = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) acc = _mm512_add_ps(acc, Q8_0Blocks(w, a, b, 4));
  if (b < nb) acc = _mm512_add_ps(acc, Q8_0Blocks(w, a, b, static_cast<int>(nb - b)));
  return _mm512_reduce_add_ps(acc);
}

// 64 codes from 32 packed bytes: low nibbles, then high nibbles.
HWY_INLINE __m512i Nibbles64(const uint8_t* packed) {
  const __m512i both =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed)));
  const __m512i shifts = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
  return _mm512_and_si512(_mm512_srlv_epi64(both, shifts), _mm512_set1_epi8(0x0F));
}

// Q4_K's 8 six-bit scales (or mins) as bytes: bits 0-5 of scales[0..3] (of
// [4..7] for mins), then the low nibbles (high for mins) of scales[8..11]
// with bits 6-7 of the first four bytes on top (get_scale_min_k4).
HWY_INLINE uint64_t ScalesK4(const uint8_t* s, bool mins) {
  uint32_t w[3];
  std::memcpy(w, s, 12);
  const uint32_t base = mins ? w[1] : w[0];
  const uint32_t low = (base & 0x3F3F3F3Fu);
  const uint32_t nib = mins ? (w[2] >> 4) & 0x0F0F0F0Fu : w[2] & 0x0F0F0F0Fu;
  const uint32_t high = nib | ((base >> 2) & 0x30303030u);
  return low | (uint64_t{high} << 32);
}

// Bytes 4j..4j+3 of the result, widened to int32: byte j of the 8 bytes, for
// the 4 bytes starting at `first`.
HWY_INLINE __m512i SpreadBytes4(uint64_t bytes, int first) {
  const __m128i take = _mm_add_epi8(_mm_set_epi8(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                                    _mm_set1_epi8(static_cast<char>(first)));
  return _mm512_cvtepu8_epi32(
      _mm_shuffle_epi8(_mm_cvtsi64_si128(static_cast<int64_t>(bytes)), take));
}

HWY_INLINE float FusedRowDot(WeightQ4_K, const uint8_t* w, int64_t k, const ActRow& a) {
  __m512 acc = _mm512_setzero_ps();
  __m256 acc_min = _mm256_setzero_ps();
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t sb = 0; sb < k / kQK_K; ++sb) {
    const uint8_t* p = w + sb * sizeof(BlockQ4_K);
    const uint8_t* qs = p + offsetof(BlockQ4_K, qs);
    const int8_t* q = a.qs + sb * kQK_K;
    __m512i dot[4];
    for (int c = 0; c < 4; ++c) {
      const __m512i act = _mm512_loadu_si512(q + 64 * c);
      dot[c] = _mm512_dpbusd_epi32(zero, Nibbles64(qs + 32 * c), act);
    }
    // Sub-blocks 0-3 and 4-7, 4 lanes each, times their 6-bit scales.
    const uint64_t scales = ScalesK4(p + offsetof(BlockQ4_K, scales), false);
    const __m512i sum = _mm512_add_epi32(
        _mm512_mullo_epi32(FoldBlockPairs(dot[0], dot[1]), SpreadBytes4(scales, 0)),
        _mm512_mullo_epi32(FoldBlockPairs(dot[2], dot[3]), SpreadBytes4(scales, 4)));
    // Mins act on the 32-element activation code sums.
    const uint64_t mins = ScalesK4(p + offsetof(BlockQ4_K, scales), true);
    const __m256i min_sum =
        _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(mins))),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.isum32 + sb * 8)));
    const float da = a.d[sb];
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                          _mm512_set1_ps(F16At(p + offsetof(BlockQ4_K, d)) * da), acc);
    acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(min_sum),
                              _mm256_set1_ps(F16At(p + offsetof(BlockQ4_K, dmin)) * da), acc_min);
  }
  const __m128 m = _mm_add_ps(_mm256_castps256_ps128(acc_min), _mm256_extractf128_ps(acc_min, 1));
  const __m128 m2 = _mm_add_ps(m, _mm_movehl_ps(m, m));
  return _mm512_reduce_add_ps(acc) - _mm_cvtss_f32(_mm_add_ss(m2, _mm_movehdup_ps(m2)));
}

HWY_INLINE float FusedRowDot(WeightQ6_K, const uint8_t* w, int64_t k, const ActRow& a) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i bits45 = _mm512_set1_epi8(0x30);
  // High 2 bits of element 128h + 64n + j: bits 2s, s = 2n + j / 32, of
  // qh[32h + j % 32], moved to bits 4-5 (left by 4 - 2s, or right by 2s - 4).
  const __m512i left = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4);
  const __m512i right = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < k / kQK_K; ++sb) {
    const uint8_t* p = w + sb * sizeof(BlockQ6_K);
    const int8_t* q = a.qs + sb * kQK_K;
    const __m512i scales = _mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ6_K, scales))));
    __m512i sum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(p + offsetof(BlockQ6_K, ql) + 64 * h);
      const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(p + offsetof(BlockQ6_K, qh) + 32 * h)));
      const __m512i codes[2] = {
          _mm512_ternarylogic_epi64(_mm512_and_si512(ql, low4), _mm512_sllv_epi64(qh, left), bits45,
                                    0xF8),  // a | (b & c)
          _mm512_ternarylogic_epi64(_mm512_and_si512(_mm512_srli_epi64(ql, 4), low4),
                                    _mm512_srlv_epi64(qh, right), bits45, 0xF8)};
      for (int n = 0; n < 2; ++n) {
        const __m512i dot =
            _mm512_dpbusd_epi32(zero, codes[n], _mm512_loadu_si512(q + 128 * h + 64 * n));
        // Lanes 4j..4j+3 are group 8h + 4n + j of 16 elements.
        const int g = 8 * h + 4 * n;
        const __m512i group_scale = _mm512_permutexvar_epi32(
            _mm512_set_epi32(g + 3, g + 3, g + 3, g + 3, g + 2, g + 2, g + 2, g + 2, g + 1, g + 1,
                             g + 1, g + 1, g, g, g, g),
            scales);
        sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(dot, group_scale));
      }
    }
    // Code offset 32 on each group's activation code sum.
    const __m512i offset = _mm512_mullo_epi32(scales, _mm512_loadu_si512(a.isum16 + sb * 16));
    sum = _mm512_sub_epi32(sum, _mm512_slli_epi32(offset, 5));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                          _mm512_set1_ps(F16At(p + offsetof(BlockQ6_K, d)) * a.d[sb]), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

#endif  // HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_
