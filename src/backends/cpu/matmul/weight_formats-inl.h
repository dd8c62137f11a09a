// Per-target (Highway foreach_target) view of each quantized weight type as
// the integer GEMM engines see it. A block of kBlock elements unpacks to
// unsigned codes u (0..255) in element order and, per group g of kGroup
// elements, a float scale and min:
//   value = scale[g] * (u - kOffset) + min[g]        (min only if kHasMin)
// kActBlock names the activation row format (act_rows.hpp) the type pairs
// with: 32-element blocks for the legacy types, 256 for the K-quants.
// scale/min are written every `stride` floats so a panel of rows can
// interleave them (stride 1 for a single row).

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

template <typename Block>
HWY_INLINE Block LoadBlock(const uint8_t* p) {
  Block b;
  std::memcpy(&b, p, sizeof(Block));
  return b;
}

// Element e of a 32-element nibble block: low nibble of qs[e] for e < 16,
// high nibble of qs[e - 16] after.
HWY_INLINE void UnpackNibbles32(const uint8_t* qs, uint8_t* codes) {
  for (int j = 0; j < 16; ++j) {
    codes[j] = qs[j] & 0x0F;
    codes[j + 16] = qs[j] >> 4;
  }
}

// Adds bit 4 (bit e of the little-endian qh word) to each of 32 codes.
HWY_INLINE void AddHighBits32(const uint8_t* qh, uint8_t* codes) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  for (int j = 0; j < 32; ++j) codes[j] |= static_cast<uint8_t>(((bits >> j) & 1u) << 4);
}

// The 2-bit codes of Q2_K/Q3_K (and Q6_K's high bits): element e sits in byte
// (e / 128) * 32 + e % 32 at bit offset 2 * ((e % 128) / 32).
HWY_INLINE void UnpackTwoBits256(const uint8_t* qs, uint8_t* codes) {
  for (int e = 0; e < kQK_K; ++e) {
    codes[e] = (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3u;
  }
}

struct WeightQ4_0 {
  using Block = BlockQ4_0;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 8, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = false;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t) {
    const auto b = LoadBlock<Block>(p);
    UnpackNibbles32(b.qs, codes);
    scale[0] = F16ToF32(b.d);
  }
};

struct WeightQ4_1 {
  using Block = BlockQ4_1;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 0, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = true;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t) {
    const auto b = LoadBlock<Block>(p);
    UnpackNibbles32(b.qs, codes);
    scale[0] = F16ToF32(b.d);
    min[0] = F16ToF32(b.m);
  }
};

struct WeightQ5_0 {
  using Block = BlockQ5_0;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 16, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = false;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t) {
    const auto b = LoadBlock<Block>(p);
    UnpackNibbles32(b.qs, codes);
    AddHighBits32(b.qh, codes);
    scale[0] = F16ToF32(b.d);
  }
};

struct WeightQ5_1 {
  using Block = BlockQ5_1;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 0, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = true;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t) {
    const auto b = LoadBlock<Block>(p);
    UnpackNibbles32(b.qs, codes);
    AddHighBits32(b.qh, codes);
    scale[0] = F16ToF32(b.d);
    min[0] = F16ToF32(b.m);
  }
};

// int8 codes become unsigned by adding 128 (flipping the sign bit).
struct WeightQ8_0 {
  using Block = BlockQ8_0;
  static constexpr int kBlock = 32, kGroup = 32, kOffset = 128, kActBlock = kActBlockLegacy;
  static constexpr bool kHasMin = false;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t) {
    const auto b = LoadBlock<Block>(p);
    for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(b.qs[j]) ^ 0x80u;
    scale[0] = F16ToF32(b.d);
  }
};

struct WeightQ2_K {
  using Block = BlockQ2_K;
  static constexpr int kBlock = kQK_K, kGroup = 16, kOffset = 0, kActBlock = kActBlockK;
  static constexpr bool kHasMin = true;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t stride) {
    const auto b = LoadBlock<Block>(p);
    UnpackTwoBits256(b.qs, codes);
    const float d = F16ToF32(b.d);
    const float dmin = F16ToF32(b.dmin);
    for (int g = 0; g < kQK_K / 16; ++g) {
      scale[g * stride] = d * static_cast<float>(b.scales[g] & 0x0F);
      min[g * stride] = -(dmin * static_cast<float>(b.scales[g] >> 4));
    }
  }
};

// Codes are the 3-bit q3 = low2 | hbit << 2, so value = scale * (q3 - 4).
struct WeightQ3_K {
  using Block = BlockQ3_K;
  static constexpr int kBlock = kQK_K, kGroup = 16, kOffset = 4, kActBlock = kActBlockK;
  static constexpr bool kHasMin = false;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t stride) {
    const auto b = LoadBlock<Block>(p);
    UnpackTwoBits256(b.qs, codes);
    for (int e = 0; e < kQK_K; ++e) codes[e] |= ((b.hmask[e % 32] >> (e / 32)) & 1u) << 2;
    const float d = F16ToF32(b.d);
    for (int i = 0; i < kQK_K / 16; ++i) {
      const int low = i < 8 ? (b.scales[i] & 0x0F) : (b.scales[i - 8] >> 4);
      const int high = (b.scales[8 + i % 4] >> (2 * (i / 4))) & 3;
      scale[i * stride] = d * static_cast<float>((low | (high << 4)) - 32);
    }
  }
};

// Q4_K/Q5_K nibbles: element e in qs[(e / 64) * 32 + e % 32], low nibble for
// the first 32 of each 64.
HWY_INLINE void UnpackNibblesK(const uint8_t* qs, uint8_t* codes) {
  for (int c = 0; c < 4; ++c) {
    for (int j = 0; j < 32; ++j) {
      codes[64 * c + j] = qs[32 * c + j] & 0x0F;
      codes[64 * c + 32 + j] = qs[32 * c + j] >> 4;
    }
  }
}

HWY_INLINE void ScaleMinK(const uint8_t* scales, float d, float dmin, float* scale, float* min,
                          size_t stride) {
  for (int j = 0; j < 8; ++j) {
    const quant::ScaleMin sm = quant::get_scale_min_k4(j, scales);
    scale[j * stride] = d * static_cast<float>(sm.scale);
    min[j * stride] = -(dmin * static_cast<float>(sm.min));
  }
}

struct WeightQ4_K {
  using Block = BlockQ4_K;
  static constexpr int kBlock = kQK_K, kGroup = 32, kOffset = 0, kActBlock = kActBlockK;
  static constexpr bool kHasMin = true;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t stride) {
    const auto b = LoadBlock<Block>(p);
    UnpackNibblesK(b.qs, codes);
    ScaleMinK(b.scales, F16ToF32(b.d), F16ToF32(b.dmin), scale, min, stride);
  }
};

struct WeightQ5_K {
  using Block = BlockQ5_K;
  static constexpr int kBlock = kQK_K, kGroup = 32, kOffset = 0, kActBlock = kActBlockK;
  static constexpr bool kHasMin = true;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float* min, size_t stride) {
    const auto b = LoadBlock<Block>(p);
    UnpackNibblesK(b.qs, codes);
    for (int e = 0; e < kQK_K; ++e) codes[e] |= ((b.qh[e % 32] >> (e / 32)) & 1u) << 4;
    ScaleMinK(b.scales, F16ToF32(b.d), F16ToF32(b.dmin), scale, min, stride);
  }
};

// Codes are the 6-bit q (low 4 bits from ql, high 2 from qh), value = scale * (q - 32).
struct WeightQ6_K {
  using Block = BlockQ6_K;
  static constexpr int kBlock = kQK_K, kGroup = 16, kOffset = 32, kActBlock = kActBlockK;
  static constexpr bool kHasMin = false;
  static void Unpack(const uint8_t* p, uint8_t* codes, float* scale, float*, size_t stride) {
    const auto b = LoadBlock<Block>(p);
    UnpackTwoBits256(b.qh, codes);
    for (int e = 0; e < kQK_K; ++e) {
      const int low = (b.ql[(e / 128) * 64 + e % 64] >> (4 * ((e % 128) / 64))) & 0x0F;
      codes[e] = static_cast<uint8_t>(low | (codes[e] << 4));
    }
    const float d = F16ToF32(b.d);
    for (int g = 0; g < kQK_K / 16; ++g) scale[g * stride] = d * static_cast<float>(b.scales[g]);
  }
};

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_WEIGHT_FORMATS_INL_H_
