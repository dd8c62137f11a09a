// Per-target (Highway foreach_target) view of each quantized weight type as
// the integer GEMM engines see it. A block of kBlock elements unpacks to
// unsigned codes u (0..255) in element order and, per group g of kGroup
// elements, a float scale and min:
//   value = scale[g] * (u - kOffset) + min[g]        (min only if kHasMin)
// kMaxCode bounds the codes (kernels pick their dot product by it).
// kActBlock names the activation row format (act_rows.hpp) the type pairs
// with: 32-element blocks for the legacy types, 256 for the K-quants.
// scale/min are written every `stride` floats so a panel of rows can
// interleave them (stride 1 for a single row).
//
// Codes are unpacked 16 at a time with 128-bit vectors, which every target
// but HWY_SCALAR has (the scalar target dequantizes instead, see
// quant_engine-inl.h).

#if defined(POLYINFER_MATMUL_WEIGHT_FORMATS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_MATMUL_WEIGHT_FORMATS_INL_H_
#undef POLYINFER_MATMUL_WEIGHT_FORMATS_INL_H_
#else
#define POLYINFER_MATMUL_WEIGHT_FORMATS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backends/cpu/matmul/act_rows.hpp"
#include "core/quant_k_scales.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant_blocks.hpp"

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// IEEE binary16 bits to float (F16C where the target has it).
HWY_INLINE float F16ToF32(uint16_t bits) {
  const hn::CappedTag<float, 1> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  hwy::float16_t h;
  std::memcpy(&h, &bits, 2);
  return hn::GetLane(hn::PromoteTo(df, hn::LoadU(dh, &h)));
}

#if HWY_TARGET != HWY_SCALAR

using D16 = hn::Full128<uint8_t>;
using V16 = hn::Vec<D16>;

// The 16 codes of low nibbles and the 16 of high nibbles of 16 packed bytes.
HWY_INLINE void StoreNibbles(V16 packed, uint8_t* low, uint8_t* high) {
  const D16 d;
  hn::StoreU(hn::And(packed, hn::Set(d, 0x0F)), d, low);
  hn::StoreU(hn::ShiftRight<4>(packed), d, high);
}

// value where the bit `bit` (a one-bit byte) of each lane of v is set, else 0.
HWY_INLINE V16 WhereBit(V16 v, uint8_t bit, uint8_t value) {
  const D16 d;
  return hn::IfThenElseZero(hn::TestBit(v, hn::Set(d, bit)), hn::Set(d, value));
}

// Adds 16 to codes[j] for each set bit j of the 32-bit little-endian word qh
// (bit 4 of Q5_0/Q5_1 codes).
HWY_INLINE void AddHighBits32(const uint8_t* qh, uint8_t* codes) {
  const D16 d;
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  const V16 word = hn::BitCast(d, hn::Set(hn::Repartition<uint32_t, D16>(), bits));
  // Lane j of half h reads byte (16h + j) / 8 and tests bit j % 8.
  alignas(16) static constexpr uint8_t kByte[2][16] = {
      {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3}};
  alignas(16) static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                                   1, 2, 4, 8, 16, 32, 64, 128};
  const V16 bit = hn::Load(d, kBit);
  for (int h = 0; h < 2; ++h) {
    const V16 bytes = hn::TableLookupBytes(word, hn::Load(d, kByte[h]));
    const V16 high = hn::IfThenElseZero(hn::TestBit(bytes, bit), hn::Set(d, 16));
    hn::StoreU(hn::Or(hn::LoadU(d, codes + 16 * h), high), d, codes + 16 * h);
  }
}

// Element e of a 32-element nibble block: low nibble of qs[e] for e < 16,
// high nibble of qs[e - 16] after.
HWY_INLINE void UnpackNibbles32(const uint8_t* qs, uint8_t* codes) {
  StoreNibbles(hn::LoadU(D16(), qs), codes, codes + 16);
}

// The 2-bit codes of Q2_K/Q3_K (and Q6_K's high bits): element
// 128h + 32s + j (j < 32) is bits 2s..2s+1 of qs[32h + j].
HWY_INLINE V16 TwoBits(V16 packed, int s) {
  return hn::And(hn::ShiftRightSame(packed, 2 * s), hn::Set(D16(), 3));
}

#endif  // HWY_TARGET != HWY_SCALAR

// Block fields are read in place (blocks in a row need not be aligned):
// copying a block to the stack first would make every vector load of it
// wait on a failed store-to-load forward.
HWY_INLINE float F16At(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return F16ToF32(bits);
}

struct WeightQ4_0 {
  using Block = BlockQ4_0;
  static constexpr GgmlType kType = GgmlType::Q4_0;
  static constexpr int kMaxCode = 15;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 8, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = false;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t) {
    UnpackNibbles32(p + offsetof(Block, qs), codes);
    scale[0] = F16At(p + offsetof(Block, d));
  }
#endif
};

struct WeightQ4_1 {
  using Block = BlockQ4_1;
  static constexpr GgmlType kType = GgmlType::Q4_1;
  static constexpr int kMaxCode = 15;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 0, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = true;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t) {
    UnpackNibbles32(p + offsetof(Block, qs), codes);
    scale[0] = F16At(p + offsetof(Block, d));
    min[0] = F16At(p + offsetof(Block, m));
  }
#endif
};

struct WeightQ5_0 {
  using Block = BlockQ5_0;
  static constexpr GgmlType kType = GgmlType::Q5_0;
  static constexpr int kMaxCode = 31;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 16, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = false;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t) {
    UnpackNibbles32(p + offsetof(Block, qs), codes);
    AddHighBits32(p + offsetof(Block, qh), codes);
    scale[0] = F16At(p + offsetof(Block, d));
  }
#endif
};

struct WeightQ5_1 {
  using Block = BlockQ5_1;
  static constexpr GgmlType kType = GgmlType::Q5_1;
  static constexpr int kMaxCode = 31;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 0, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = true;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t) {
    UnpackNibbles32(p + offsetof(Block, qs), codes);
    AddHighBits32(p + offsetof(Block, qh), codes);
    scale[0] = F16At(p + offsetof(Block, d));
    min[0] = F16At(p + offsetof(Block, m));
  }
#endif
};

// int8 codes become unsigned by adding 128 (flipping the sign bit).
struct WeightQ8_0 {
  using Block = BlockQ8_0;
  static constexpr GgmlType kType = GgmlType::Q8_0;
  static constexpr int kMaxCode = 255;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 128, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = false;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t) {
    const D16 d;
    const uint8_t* qs = p + offsetof(Block, qs);
    for (int h = 0; h < 2; ++h) {
      hn::StoreU(hn::Xor(hn::LoadU(d, qs + 16 * h), hn::Set(d, 0x80)), d, codes + 16 * h);
    }
    scale[0] = F16At(p + offsetof(Block, d));
  }
#endif
};

struct WeightQ2_K {
  using Block = BlockQ2_K;
  static constexpr GgmlType kType = GgmlType::Q2_K;
  static constexpr int kMaxCode = 3;
  static constexpr int kBlock = kQK_K, kGroup = 16, kOffset = 0, kActBlock = kActBlockK;
  static constexpr bool kHasMin = true;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t stride) {
    const D16 d;
    const uint8_t* qs = p + offsetof(Block, qs);
    const uint8_t* scales = p + offsetof(Block, scales);
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 32; j += 16) {
        const V16 packed = hn::LoadU(d, qs + 32 * h + j);
        for (int s = 0; s < 4; ++s) hn::StoreU(TwoBits(packed, s), d, codes + 128 * h + 32 * s + j);
      }
    }
    const float dall = F16At(p + offsetof(Block, d));
    const float dmin = F16At(p + offsetof(Block, dmin));
    for (int g = 0; g < kQK_K / 16; ++g) {
      scale[g * stride] = dall * static_cast<float>(scales[g] & 0x0F);
      min[g * stride] = -(dmin * static_cast<float>(scales[g] >> 4));
    }
  }
#endif
};

// Codes are the 3-bit q3 = low2 | hbit << 2, so value = scale * (q3 - 4).
struct WeightQ3_K {
  using Block = BlockQ3_K;
  static constexpr GgmlType kType = GgmlType::Q3_K;
  static constexpr int kMaxCode = 7;
  static constexpr int kBlock = kQK_K, kGroup = 16, kOffset = 4, kActBlock = kActBlockK;
  static constexpr bool kHasMin = false;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t stride) {
    const D16 d;
    const uint8_t* qs = p + offsetof(Block, qs);
    const uint8_t* scales = p + offsetof(Block, scales);
    for (int j = 0; j < 32; j += 16) {
      // hmask[e % 32] bit e / 32 is the high bit of element e.
      const V16 hmask = hn::LoadU(d, p + offsetof(Block, hmask) + j);
      for (int h = 0; h < 2; ++h) {
        const V16 packed = hn::LoadU(d, qs + 32 * h + j);
        for (int s = 0; s < 4; ++s) {
          const V16 high = WhereBit(hmask, static_cast<uint8_t>(1u << (4 * h + s)), 4);
          hn::StoreU(hn::Or(TwoBits(packed, s), high), d, codes + 128 * h + 32 * s + j);
        }
      }
    }
    const float dall = F16At(p + offsetof(Block, d));
    for (int i = 0; i < kQK_K / 16; ++i) {
      const int low = i < 8 ? (scales[i] & 0x0F) : (scales[i - 8] >> 4);
      const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
      scale[i * stride] = dall * static_cast<float>((low | (high << 4)) - 32);
    }
  }
#endif
};

HWY_INLINE void ScaleMinK(const uint8_t* scales, float d, float dmin, float* scale, float* min,
                          size_t stride) {
  for (int j = 0; j < 8; ++j) {
    const quant::ScaleMin sm = quant::get_scale_min_k4(j, scales);
    scale[j * stride] = d * static_cast<float>(sm.scale);
    min[j * stride] = -(dmin * static_cast<float>(sm.min));
  }
}

#if HWY_TARGET != HWY_SCALAR
// Q4_K/Q5_K nibbles: element e in qs[(e / 64) * 32 + e % 32], low nibble for
// the first 32 of each 64.
HWY_INLINE void UnpackNibblesK(const uint8_t* qs, uint8_t* codes) {
  for (int c = 0; c < 4; ++c) {
    for (int j = 0; j < 32; j += 16) {
      StoreNibbles(hn::LoadU(D16(), qs + 32 * c + j), codes + 64 * c + j, codes + 64 * c + 32 + j);
    }
  }
}
#endif

struct WeightQ4_K {
  using Block = BlockQ4_K;
  static constexpr GgmlType kType = GgmlType::Q4_K;
  static constexpr int kMaxCode = 15;
  static constexpr int kBlock = kQK_K, kGroup = 32, kOffset = 0, kActBlock = kActBlockK;
  static constexpr bool kHasMin = true;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t stride) {
    UnpackNibblesK(p + offsetof(Block, qs), codes);
    ScaleMinK(p + offsetof(Block, scales), F16At(p + offsetof(Block, d)),
              F16At(p + offsetof(Block, dmin)), scale, min, stride);
  }
#endif
};

struct WeightQ5_K {
  using Block = BlockQ5_K;
  static constexpr GgmlType kType = GgmlType::Q5_K;
  static constexpr int kMaxCode = 31;
  static constexpr int kBlock = kQK_K, kGroup = 32, kOffset = 0, kActBlock = kActBlockK;
  static constexpr bool kHasMin = true;
#if HWY_TARGET != HWY_SCALAR
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t stride) {
    const D16 d;
    UnpackNibblesK(p + offsetof(Block, qs), codes);
    // Bit 4 of element e is bit e / 32 of qh[e % 32].
    for (int j = 0; j < 32; j += 16) {
      const V16 qh = hn::LoadU(d, p + offsetof(Block, qh) + j);
      for (int q = 0; q < 8; ++q) {
        uint8_t* c = codes + 32 * q + j;
        hn::StoreU(hn::Or(hn::LoadU(d, c), WhereBit(qh, static_cast<uint8_t>(1u << q), 16)), d, c);
      }
    }
    ScaleMinK(p + offsetof(Block, scales), F16At(p + offsetof(Block, d)),
              F16At(p + offsetof(Block, dmin)), scale, min, stride);
  }
#endif
};

// Codes are the 6-bit q (low 4 bits from ql, high 2 from qh), value = scale * (q - 32).
struct WeightQ6_K {
  using Block = BlockQ6_K;
  static constexpr GgmlType kType = GgmlType::Q6_K;
  static constexpr int kMaxCode = 63;
  static constexpr int kBlock = kQK_K, kGroup = 16, kOffset = 32, kActBlock = kActBlockK;
  static constexpr bool kHasMin = false;
#if HWY_TARGET != HWY_SCALAR
  // Element 128h + 64n + j (j < 64): nibble n of ql[64h + j]; high bits: bits
  // 2s..2s+1 of qh[32h + j % 32] with s = (64n + j) / 32.
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t stride) {
    const D16 d;
    const int8_t* scales = reinterpret_cast<const int8_t*>(p + offsetof(Block, scales));
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 64; j += 16) {
        const V16 ql = hn::LoadU(d, p + offsetof(Block, ql) + 64 * h + j);
        const V16 qh = hn::LoadU(d, p + offsetof(Block, qh) + 32 * h + j % 32);
        const int s = j / 32;
        const V16 low = hn::And(ql, hn::Set(d, 0x0F));
        const V16 high = hn::ShiftRight<4>(ql);
        hn::StoreU(hn::Or(low, hn::ShiftLeft<4>(TwoBits(qh, s))), d, codes + 128 * h + j);
        hn::StoreU(hn::Or(high, hn::ShiftLeft<4>(TwoBits(qh, s + 2))), d, codes + 128 * h + 64 + j);
      }
    }
    const float dall = F16At(p + offsetof(Block, d));
    for (int g = 0; g < kQK_K / 16; ++g) scale[g * stride] = dall * static_cast<float>(scales[g]);
  }
#endif
};

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_WEIGHT_FORMATS_INL_H_
