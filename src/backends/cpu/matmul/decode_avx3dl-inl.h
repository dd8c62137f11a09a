// Per-target (Highway foreach_target) fused row-dot kernels for the
// matrix-vector (decode) path on AVX3_DL (AVX-512 VBMI + VNNI): one weight
// row against one activation row (act_rows.hpp), codes unpacked in registers
// straight from the stored blocks, so each weight byte is loaded once and
// never stored. Memory-bound by design: a row streams once. Every quantized
// type has one; other targets use the generic decode path of
// quant_decode-inl.h.
//
// Lane layout (vpdpbusd sums 4 bytes per int32 lane): 64 codes in natural
// element order per zmm, so the activation codes load as they are stored.
// 32-element blocks: two dpbusd results (2 blocks each, 8 lanes per block)
// are folded into one vector of 4 blocks x 4 lanes before the float work.
// K-quants: the per-group integer scales multiply the int32 dots (exact),
// one float conversion per super-block.

#if defined(POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_
#undef POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_
#else
#define POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/thread_scratch.hpp"
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

template <class W>
inline constexpr bool kIsLegacy4or5 =
    std::is_same_v<W, WeightQ4_0> || std::is_same_v<W, WeightQ4_1> ||
    std::is_same_v<W, WeightQ5_0> || std::is_same_v<W, WeightQ5_1>;

template <>
inline constexpr bool kHasFusedRowDot<WeightQ4_0> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ4_1> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ5_0> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ5_1> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ8_0> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ2_K> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ3_K> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ4_K> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ5_K> = true;
template <>
inline constexpr bool kHasFusedRowDot<WeightQ6_K> = true;

// ------------------------------------------------------------------ helpers

// Weight bytes prefetched ahead of the ones being multiplied. With the
// hardware prefetchers alone, rows of k = 2048 (most of a 1B model's
// matrices) streamed 15-30% slower than rows of 4096 for the 4/5-bit
// 32-element types and Q6_K (measured on Zen 4, DRAM-resident weights); for
// Q8_0, Q2_K and Q3_K it made no difference and Q4_K/Q5_K lost ~5%.
inline constexpr int kPrefetchBytes = 4096;
template <class W>
inline constexpr bool kPrefetchesWeights = kIsLegacy4or5<W> || std::is_same_v<W, WeightQ6_K>;

// Prefetches the cache lines of `bytes` weight bytes kPrefetchBytes after p.
template <class W>
HWY_INLINE void PrefetchWeights(const uint8_t* p, int bytes) {
  if constexpr (!kPrefetchesWeights<W>) return;
  for (int off = 0; off < bytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kPrefetchBytes + off), _MM_HINT_T0);
  }
}

// Bytes [0, n) of a 64-byte load.
HWY_INLINE __mmask64 FirstBytes(int n) {
  return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
}

HWY_INLINE uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Folds two dpbusd results of 2 blocks each (int32 lanes 0-7: first block,
// 8-15: second) into 4 blocks x 4 lanes: lanes 4j..4j+3 sum to block j.
HWY_INLINE __m512i FoldBlockPairs(__m512i ab, __m512i cd) {
  return _mm512_add_epi32(_mm512_shuffle_i32x4(ab, cd, 0x88), _mm512_shuffle_i32x4(ab, cd, 0xDD));
}

// Lane i: element i / 4 of the 4 at v.
HWY_INLINE __m512i SpreadBy4(__m512i v) {
  return _mm512_permutexvar_epi32(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                                  v);
}

// Horizontal sum of 8 floats.
HWY_INLINE float ReduceAdd(__m256 v) {
  const __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 m2 = _mm_add_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_add_ss(m2, _mm_movehdup_ps(m2)));
}

// Runs acc = blocks(b, n, acc) over a row of nb blocks in groups of 4 (the
// last group may be shorter) and sums the lanes of acc.
template <class Blocks>
HWY_INLINE float SumBlockGroups(int64_t nb, Blocks blocks) {
  __m512 acc = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) acc = blocks(b, 4, acc);
  if (b < nb) acc = blocks(b, static_cast<int>(nb - b), acc);
  return _mm512_reduce_add_ps(acc);
}

// Blocks b..b+n-1 of a row of nb, in groups of 4 starting at b.
HWY_INLINE int QuadSize(int64_t nb, int64_t b) {
  return static_cast<int>(std::min<int64_t>(4, nb - b));
}

// --------------------------------------------------- Q4_0, Q4_1, Q5_0, Q5_1

// vpermb indices taking a pair of blocks' 16 nibble bytes (at qs and
// bytes + qs) to [A, A, B, B]: the second copies become the high nibbles.
constexpr std::array<uint8_t, 64> PairNibbleTake(size_t qs, size_t bytes) {
  std::array<uint8_t, 64> t{};
  for (size_t i = 0; i < 16; ++i) {
    t[i] = t[16 + i] = static_cast<uint8_t>(qs + i);
    t[32 + i] = t[48 + i] = static_cast<uint8_t>(bytes + qs + i);
  }
  return t;
}

// vpermt2w indices spreading the f16 at byte `field` of 4 blocks (2 in each
// of two 64-byte loads) to 4 u16 lanes each.
constexpr std::array<uint16_t, 32> QuadF16Take(size_t field, size_t bytes) {
  std::array<uint16_t, 32> t{};
  const size_t src[4] = {field / 2, (bytes + field) / 2, 32 + field / 2, 32 + (bytes + field) / 2};
  for (size_t i = 0; i < 16; ++i) t[i] = static_cast<uint16_t>(src[i / 4]);
  return t;
}

// 64 codes of a block pair (loaded at raw): nibbles, plus bit 4 from qh for Q5.
template <class W>
HWY_INLINE __m512i PairCodes(__m512i raw, const uint8_t* p, int blocks) {
  using Block = typename W::Block;
  alignas(64) static constexpr auto kTake = PairNibbleTake(offsetof(Block, qs), sizeof(Block));
  const __m512i shifts = _mm512_set_epi64(4, 4, 0, 0, 4, 4, 0, 0);
  __m512i codes = _mm512_and_si512(
      _mm512_srlv_epi64(_mm512_permutexvar_epi8(_mm512_load_si512(kTake.data()), raw), shifts),
      _mm512_set1_epi8(0x0F));
  if constexpr (std::is_same_v<W, WeightQ5_0> || std::is_same_v<W, WeightQ5_1>) {
    // Bit j of a block's qh word is bit 4 of its element j.
    const uint64_t high =
        (blocks > 0 ? LoadU32(p + offsetof(Block, qh)) : 0u) |
        uint64_t{blocks > 1 ? LoadU32(p + sizeof(Block) + offsetof(Block, qh)) : 0u} << 32;
    codes = _mm512_mask_add_epi8(codes, _cvtu64_mask64(high), codes, _mm512_set1_epi8(16));
  }
  return codes;
}

// The activation side of 4 blocks, the same for every weight row, kept
// compact (48 bytes: a long row's worth stays in L1 beside the weight
// stream; full vectors per block group cost up to 40% at k = 8192): block
// scales, the code-offset terms -offset * code sum, and d * code sum (mins).
struct QuadPrep {
  alignas(16) float da[4];
  alignas(16) int32_t offset[4];
  alignas(16) float dsum[4];
};

template <class W>
HWY_INLINE QuadPrep PrepareQuad(const ActRow& a, int64_t b, int nblk) {
  const __m128 da4 = _mm_maskz_loadu_ps((1 << nblk) - 1, a.d + b);
  const __m128i sums = _mm_maskz_loadu_epi32((1 << nblk) - 1, a.isum32 + b);
  QuadPrep prep;
  _mm_store_ps(prep.da, da4);
  _mm_store_si128(reinterpret_cast<__m128i*>(prep.offset),
                  _mm_mullo_epi32(sums, _mm_set1_epi32(-W::kOffset)));
  _mm_store_ps(prep.dsum, _mm_mul_ps(da4, _mm_cvtepi32_ps(sums)));
  return prep;
}

// Activation scales of the 4 blocks, 4 lanes each (the folded layout).
HWY_INLINE __m512 ScaleLanes(const QuadPrep& prep) {
  return _mm512_castsi512_ps(
      SpreadBy4(_mm512_castps_si512(_mm512_castps128_ps512(_mm_load_ps(prep.da)))));
}

// dpbusd initial values applying the code offsets of a block pair (first =
// 0: blocks 0-1, 2: blocks 2-3): block first in lane 0, the next in lane 8
// (folding moves them to lanes 4j).
HWY_INLINE __m512i OffsetInit(const QuadPrep& prep, int first) {
  const __m512i idx = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, first + 1, 0, 0, 0, 0, 0, 0, 0, first);
  return _mm512_maskz_permutexvar_epi32(
      0x0101, idx,
      _mm512_castsi128_si512(_mm_load_si128(reinterpret_cast<const __m128i*>(prep.offset))));
}

// d * code sum of each block in lane 4j, 0 elsewhere.
HWY_INLINE __m512 MinLanes(const QuadPrep& prep) {
  return _mm512_maskz_mov_ps(0x1111, _mm512_castsi512_ps(SpreadBy4(_mm512_castps_si512(
                                         _mm512_castps128_ps512(_mm_load_ps(prep.dsum))))));
}

// acc plus the contribution of blocks b..b+nblk-1 (nblk <= 4) of a
// Q4_0/Q4_1/Q5_0/Q5_1 row.
template <class W>
HWY_INLINE __m512 LegacyNibbleBlocks(const uint8_t* w, const ActRow& a, int64_t b, int nblk,
                                     const QuadPrep& prep, __m512 acc) {
  using Block = typename W::Block;
  constexpr int kBytes = sizeof(Block);
  const uint8_t* p = w + b * kBytes;
  PrefetchWeights<W>(p, 4 * kBytes);
  const int ab = std::min(nblk, 2), cd = std::max(nblk - 2, 0);
  const __m512i raw_ab = _mm512_maskz_loadu_epi8(FirstBytes(kBytes * ab), p);
  const __m512i raw_cd = _mm512_maskz_loadu_epi8(FirstBytes(kBytes * cd), p + 2 * kBytes);
  const int8_t* q = a.qs + b * 32;
  const __m512i act_ab = _mm512_maskz_loadu_epi8(FirstBytes(32 * ab), q);
  const __m512i act_cd = _mm512_maskz_loadu_epi8(FirstBytes(32 * cd), q + 64);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i init_ab = W::kOffset ? OffsetInit(prep, 0) : zero;
  const __m512i init_cd = W::kOffset ? OffsetInit(prep, 2) : zero;
  const __m512i dot = FoldBlockPairs(
      _mm512_dpbusd_epi32(init_ab, PairCodes<W>(raw_ab, p, ab), act_ab),
      _mm512_dpbusd_epi32(init_cd, PairCodes<W>(raw_cd, p + 2 * kBytes, cd), act_cd));
  alignas(64) static constexpr auto kTakeD = QuadF16Take(offsetof(Block, d), kBytes);
  const __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(
      _mm512_permutex2var_epi16(raw_ab, _mm512_load_si512(kTakeD.data()), raw_cd)));
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, ScaleLanes(prep)), acc);
  if constexpr (W::kHasMin) {
    // min * d_act * code sum of each block, once (lane 4j).
    alignas(64) static constexpr auto kTakeM = QuadF16Take(offsetof(Block, m), kBytes);
    const __m512 mw = _mm512_cvtph_ps(_mm512_castsi512_si256(
        _mm512_permutex2var_epi16(raw_ab, _mm512_load_si512(kTakeM.data()), raw_cd)));
    acc = _mm512_fmadd_ps(mw, MinLanes(prep), acc);
  }
  return acc;
}

template <class W, std::enable_if_t<kIsLegacy4or5<W>, int> = 0>
HWY_INLINE float FusedRowDot(W, const uint8_t* w, int64_t k, const ActRow& a,
                             const QuadPrep* prep) {
  return SumBlockGroups(k / 32, [&](int64_t b, int n, __m512 acc) {
    return LegacyNibbleBlocks<W>(w, a, b, n, prep[b / 4], acc);
  });
}

// --------------------------------------------------------------------- Q8_0

// acc plus the contribution of Q8_0 blocks b..b+nblk-1 (nblk <= 4) of a row at w.
HWY_INLINE __m512 Q8_0Blocks(const uint8_t* w, const ActRow& a, int64_t b, int nblk,
                             const QuadPrep& prep, __m512 acc) {
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
  const __m512i dot = FoldBlockPairs(_mm512_dpbusd_epi32(OffsetInit(prep, 0), codes_ab, act_ab),
                                     _mm512_dpbusd_epi32(OffsetInit(prep, 2), codes_cd, act_cd));
  // The f16 scales at bytes 0, 34, 68, 102: u16 lanes 0, 17, 34, 51 of 128 bytes.
  const __m512i lo = _mm512_maskz_loadu_epi8(FirstBytes(34 * nblk), p);
  const __m512i hi = _mm512_maskz_loadu_epi8(FirstBytes(std::max(34 * nblk - 64, 0)), p + 64);
  const __m512i take_d = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 51, 51,
                                          51, 51, 34, 34, 34, 34, 17, 17, 17, 17, 0, 0, 0, 0);
  const __m512 dw =
      _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(lo, take_d, hi)));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, ScaleLanes(prep)), acc);
}

HWY_INLINE float FusedRowDot(WeightQ8_0, const uint8_t* w, int64_t k, const ActRow& a,
                             const QuadPrep* prep) {
  return SumBlockGroups(k / 32, [&](int64_t b, int n, __m512 acc) {
    return Q8_0Blocks(w, a, b, n, prep[b / 4], acc);
  });
}

// ------------------------------------------------------------- Q4_K, Q5_K

// 64 codes from 32 packed bytes: low nibbles, then high nibbles.
HWY_INLINE __m512i Nibbles64(const uint8_t* packed) {
  const __m512i both =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed)));
  const __m512i shifts = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
  return _mm512_and_si512(_mm512_srlv_epi64(both, shifts), _mm512_set1_epi8(0x0F));
}

// Q4_K/Q5_K's 8 six-bit scales (or mins) as bytes: bits 0-5 of scales[0..3]
// (of [4..7] for mins), then the low nibbles (high for mins) of
// scales[8..11] with bits 6-7 of the first four bytes on top (get_scale_min_k4).
HWY_INLINE uint64_t ScalesK4(const uint8_t* s, bool mins) {
  uint32_t w[3];
  std::memcpy(w, s, 12);
  const uint32_t base = mins ? w[1] : w[0];
  const uint32_t low = base & 0x3F3F3F3Fu;
  const uint32_t nib = mins ? (w[2] >> 4) & 0x0F0F0F0Fu : w[2] & 0x0F0F0F0Fu;
  const uint32_t high = nib | ((base >> 2) & 0x30303030u);
  return low | (uint64_t{high} << 32);
}

// Lanes 4j..4j+3: byte first + j of the 8 bytes, as int32.
HWY_INLINE __m512i SpreadBytes4(uint64_t bytes, int first) {
  const __m128i take = _mm_add_epi8(_mm_set_epi8(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                                    _mm_set1_epi8(static_cast<char>(first)));
  return _mm512_cvtepu8_epi32(
      _mm_shuffle_epi8(_mm_cvtsi64_si128(static_cast<int64_t>(bytes)), take));
}

// Sums of 8 sub-blocks of 32 (Q4_K, Q5_K with bit 4 from qh): codes times
// activations, times the 6-bit scales, and mins times activation code sums.
template <class W>
HWY_INLINE float ScaleMinKRowDot(const uint8_t* w, int64_t k, const ActRow& a) {
  using Block = typename W::Block;
  constexpr bool kFifthBit = std::is_same_v<W, WeightQ5_K>;
  __m512 acc = _mm512_setzero_ps();
  __m256 acc_min = _mm256_setzero_ps();
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t sb = 0; sb < k / kQK_K; ++sb) {
    const uint8_t* p = w + sb * sizeof(Block);
    PrefetchWeights<W>(p, sizeof(Block));
    const int8_t* q = a.qs + sb * kQK_K;
    __m512i qh = zero;
    if constexpr (kFifthBit) {
      qh = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + offsetof(Block, qh))));
    }
    __m512i dot[4];
    for (int c = 0; c < 4; ++c) {
      __m512i codes = Nibbles64(p + offsetof(Block, qs) + 32 * c);
      if constexpr (kFifthBit) {
        // Element 64c + j: bit 2c (j < 32) or 2c + 1 of qh[j % 32].
        const __m512i bit =
            _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * c))),
                               _mm256_set1_epi8(static_cast<char>(2 << (2 * c))), 1);
        codes = _mm512_mask_add_epi8(codes, _mm512_test_epi8_mask(qh, bit), codes,
                                     _mm512_set1_epi8(16));
      }
      dot[c] = _mm512_dpbusd_epi32(zero, codes, _mm512_loadu_si512(q + 64 * c));
    }
    // Sub-blocks 0-3 and 4-7, 4 lanes each, times their 6-bit scales.
    const uint64_t scales = ScalesK4(p + offsetof(Block, scales), false);
    const __m512i sum = _mm512_add_epi32(
        _mm512_mullo_epi32(FoldBlockPairs(dot[0], dot[1]), SpreadBytes4(scales, 0)),
        _mm512_mullo_epi32(FoldBlockPairs(dot[2], dot[3]), SpreadBytes4(scales, 4)));
    // Mins act on the 32-element activation code sums.
    const uint64_t mins = ScalesK4(p + offsetof(Block, scales), true);
    const __m256i min_sum =
        _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(mins))),
                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.isum32 + sb * 8)));
    const float da = a.d[sb];
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                          _mm512_set1_ps(F16At(p + offsetof(Block, d)) * da), acc);
    acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(min_sum),
                              _mm256_set1_ps(F16At(p + offsetof(Block, dmin)) * da), acc_min);
  }
  return _mm512_reduce_add_ps(acc) - ReduceAdd(acc_min);
}

HWY_INLINE float FusedRowDot(WeightQ4_K, const uint8_t* w, int64_t k, const ActRow& a,
                             const QuadPrep*) {
  return ScaleMinKRowDot<WeightQ4_K>(w, k, a);
}
HWY_INLINE float FusedRowDot(WeightQ5_K, const uint8_t* w, int64_t k, const ActRow& a,
                             const QuadPrep*) {
  return ScaleMinKRowDot<WeightQ5_K>(w, k, a);
}

// ------------------------------------------------------- Q2_K, Q3_K, Q6_K

// Lanes 4j..4j+3 of chunk `first` / 4 (16-element groups first..first+3):
// their group's int32 value from v (one lane per group).
HWY_INLINE __m512i GroupLanes(__m512i v, int first) {
  return _mm512_permutexvar_epi32(
      _mm512_add_epi32(_mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                       _mm512_set1_epi32(first)),
      v);
}

// The 2-bit codes of elements 128h + 64m + j (j < 64) from the 32 bytes at
// packed (qs[32h..]): bits 2s, s = 2m + j / 32, of packed[j % 32].
HWY_INLINE __m512i TwoBits64(const uint8_t* packed, int m) {
  const __m512i both =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed)));
  const __m512i shifts =
      _mm512_add_epi64(_mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0), _mm512_set1_epi64(4 * m));
  return _mm512_and_si512(_mm512_srlv_epi64(both, shifts), _mm512_set1_epi8(3));
}

// Q3_K's 16 six-bit scales (stored + 32): low 4 bits in the nibbles of bytes
// 0-7, high 2 bits in bytes 8-11, as in quant_k_dequant.cpp; minus 32.
HWY_INLINE __m512i ScalesQ3K(const uint8_t* s) {
  uint32_t w[3];
  std::memcpy(w, s, 12);
  uint32_t v[4];
  for (int i = 0; i < 4; ++i) {
    const uint32_t low = (i < 2 ? w[i] : w[i - 2] >> 4) & 0x0F0F0F0Fu;
    v[i] = low | (((w[2] >> (2 * i)) & 0x03030303u) << 4);
  }
  const __m128i bytes = _mm_set_epi32(static_cast<int>(v[3]), static_cast<int>(v[2]),
                                      static_cast<int>(v[1]), static_cast<int>(v[0]));
  return _mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), _mm512_set1_epi32(32));
}

// Q2_K: value = d * (sc & 15) * q - dmin * (sc >> 4) per group of 16.
HWY_INLINE float FusedRowDot(WeightQ2_K, const uint8_t* w, int64_t k, const ActRow& a,
                             const QuadPrep*) {
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < k / kQK_K; ++sb) {
    const uint8_t* p = w + sb * sizeof(BlockQ2_K);
    const int8_t* q = a.qs + sb * kQK_K;
    const __m128i packed =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ2_K, scales)));
    const __m512i scales = _mm512_cvtepu8_epi32(_mm_and_si128(packed, _mm_set1_epi8(0x0F)));
    const __m512i mins =
        _mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F)));
    __m512i sum = zero;
    for (int h = 0; h < 2; ++h) {
      for (int m = 0; m < 2; ++m) {
        const __m512i codes = TwoBits64(p + offsetof(BlockQ2_K, qs) + 32 * h, m);
        const __m512i dot =
            _mm512_dpbusd_epi32(zero, codes, _mm512_loadu_si512(q + 128 * h + 64 * m));
        sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(dot, GroupLanes(scales, 8 * h + 4 * m)));
      }
    }
    const __m512i min_sum = _mm512_mullo_epi32(mins, _mm512_loadu_si512(a.isum16 + sb * 16));
    const float da = a.d[sb];
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                          _mm512_set1_ps(F16At(p + offsetof(BlockQ2_K, d)) * da), acc);
    acc = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(min_sum),
                           _mm512_set1_ps(F16At(p + offsetof(BlockQ2_K, dmin)) * da), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// Q3_K: value = d * (s - 32) * (q3 - 4), q3 = 2 low bits | high bit << 2.
HWY_INLINE float FusedRowDot(WeightQ3_K, const uint8_t* w, int64_t k, const ActRow& a,
                             const QuadPrep*) {
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < k / kQK_K; ++sb) {
    const uint8_t* p = w + sb * sizeof(BlockQ3_K);
    const int8_t* q = a.qs + sb * kQK_K;
    const __m512i scales = ScalesQ3K(p + offsetof(BlockQ3_K, scales));
    const __m512i hmask = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + offsetof(BlockQ3_K, hmask))));
    __m512i sum = zero;
    for (int h = 0; h < 2; ++h) {
      for (int m = 0; m < 2; ++m) {
        // Element 128h + 64m + j: high bit is bit 4h + 2m + j / 32 of hmask[j % 32].
        const int s = 4 * h + 2 * m;
        const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << s)),
                                               _mm256_set1_epi8(static_cast<char>(2 << s)), 1);
        __m512i codes = TwoBits64(p + offsetof(BlockQ3_K, qs) + 32 * h, m);
        codes = _mm512_mask_add_epi8(codes, _mm512_test_epi8_mask(hmask, bit), codes,
                                     _mm512_set1_epi8(4));
        const __m512i dot =
            _mm512_dpbusd_epi32(zero, codes, _mm512_loadu_si512(q + 128 * h + 64 * m));
        sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(dot, GroupLanes(scales, 8 * h + 4 * m)));
      }
    }
    // Code offset 4 on each group's activation code sum.
    const __m512i offset = _mm512_mullo_epi32(scales, _mm512_loadu_si512(a.isum16 + sb * 16));
    sum = _mm512_sub_epi32(sum, _mm512_slli_epi32(offset, 2));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                          _mm512_set1_ps(F16At(p + offsetof(BlockQ3_K, d)) * a.d[sb]), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// Q6_K: value = d * sc * (q - 32), q = 4 bits from ql | 2 bits from qh << 4.
HWY_INLINE float FusedRowDot(WeightQ6_K, const uint8_t* w, int64_t k, const ActRow& a,
                             const QuadPrep*) {
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
    PrefetchWeights<WeightQ6_K>(p, sizeof(BlockQ6_K));
    const int8_t* q = a.qs + sb * kQK_K;
    const __m512i scales = _mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + offsetof(BlockQ6_K, scales))));
    __m512i sum = zero;
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
        sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(dot, GroupLanes(scales, 8 * h + 4 * n)));
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

// Rows w (w_stride apart) times activation rows act[0..n_cols): dst[c *
// dst_stride + r]. The activation side of the 32-element types is prepared
// once per column, for all rows.
template <class W>
void FusedGemmDecode(int64_t k, const uint8_t* w, size_t w_stride, int64_t n_rows,
                     const ActRow* act, int64_t n_cols, float* dst, size_t dst_stride) {
  constexpr bool kQuads = W::kBlock == 32;
  const int64_t nb = k / 32, quads = kQuads ? (nb + 3) / 4 : 0;
  auto* prep = reinterpret_cast<QuadPrep*>(thread_scratch(
      ScratchSlot::kDecodePrep, sizeof(QuadPrep) * static_cast<size_t>(quads * n_cols)));
  for (int64_t c = 0; c < n_cols; ++c) {
    for (int64_t g = 0; g < quads; ++g) {
      prep[c * quads + g] = PrepareQuad<W>(act[c], 4 * g, QuadSize(nb, 4 * g));
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t c = 0; c < n_cols; ++c) {
      dst[c * dst_stride + r] = FusedRowDot(W{}, w + r * w_stride, k, act[c], prep + c * quads);
    }
  }
}

#else

template <class W>
void FusedGemmDecode(int64_t k, const uint8_t* w, size_t w_stride, int64_t n_rows,
                     const ActRow* act, int64_t n_cols, float* dst, size_t dst_stride);

#endif  // HWY_TARGET == HWY_AVX3_DL && HWY_COMPILER_GCC_ACTUAL

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_DECODE_AVX3DL_INL_H_
