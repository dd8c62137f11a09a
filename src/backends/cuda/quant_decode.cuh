// Decoding of weights in their stored format (docs/QUANT_FORMATS.md), eight
// consecutive values at a time: in every type eight aligned values share one
// scale (and min), so a chunk needs one scale lookup and eight code lookups.
// Row starts are 2-byte aligned (supports() checks), and every field a chunk
// reads sits at an even offset in its block, so 16-bit loads are safe.
#pragma once

#include "backends/cuda/cuda_common.cuh"

namespace polyinfer::cuda {

__device__ __forceinline__ uint16_t ld16(const uint8_t* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}

// Eight bytes at an even address, as two little-endian 32-bit words.
__device__ __forceinline__ void ld8(const uint8_t* p, uint32_t w[2]) {
  const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
  w[0] = q[0] | (static_cast<uint32_t>(q[1]) << 16);
  w[1] = q[2] | (static_cast<uint32_t>(q[3]) << 16);
}

__device__ __forceinline__ uint32_t byte_of(const uint32_t w[2], int i) {
  return (w[i >> 2] >> (8 * (i & 3))) & 0xffu;
}

// 6-bit scale and min j of a Q4_K/Q5_K block (12 packed bytes at `s`).
__device__ __forceinline__ void scale_min_k4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Element i of a row of F32, F16 or BF16.
__device__ __forceinline__ float load_plain(uint32_t type, const uint8_t* row, int64_t i) {
  if (type == kF32) return reinterpret_cast<const float*>(row)[i];
  const uint16_t h = reinterpret_cast<const uint16_t*>(row)[i];
  return type == kF16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
}

// Values 8c .. 8c+7 of a row of `type` starting at `row`.
__device__ __forceinline__ void decode8(uint32_t type, const uint8_t* row, int64_t c,
                                        float out[8]) {
  uint32_t w[2];
  switch (type) {
    case kF32: {
      const float* f = reinterpret_cast<const float*>(row) + 8 * c;
      for (int i = 0; i < 8; ++i) out[i] = f[i];
      return;
    }
    case kF16:
    case kBF16: {
      ld8(row + 16 * c, w);
      uint32_t w2[2];
      ld8(row + 16 * c + 8, w2);
      for (int i = 0; i < 4; ++i) {
        const uint32_t word = i < 2 ? w[i] : w2[i - 2];
        const uint16_t lo = static_cast<uint16_t>(word & 0xffffu),
                       hi = static_cast<uint16_t>(word >> 16);
        out[2 * i] = type == kF16 ? f16_bits_to_f32(lo) : bf16_bits_to_f32(lo);
        out[2 * i + 1] = type == kF16 ? f16_bits_to_f32(hi) : bf16_bits_to_f32(hi);
      }
      return;
    }
    case kQ4_0:
    case kQ4_1: {
      // A 32-block holds value j (< 16) in the low nibble of qs[j] and value
      // j + 16 in its high nibble.
      const int bytes = type == kQ4_0 ? 18 : 20;
      const uint8_t* b = row + (c / 4) * bytes;
      const int sub = static_cast<int>(c % 4);
      const float d = f16_bits_to_f32(ld16(b));
      const float m = type == kQ4_0 ? -8.0f * d : f16_bits_to_f32(ld16(b + 2));
      ld8(b + (type == kQ4_0 ? 2 : 4) + (sub & 1) * 8, w);
      const int shift = sub >= 2 ? 4 : 0;
      for (int i = 0; i < 8; ++i)
        out[i] = d * static_cast<float>((byte_of(w, i) >> shift) & 15u) + m;
      return;
    }
    case kQ5_0:
    case kQ5_1: {
      const int bytes = type == kQ5_0 ? 22 : 24;
      const uint8_t* b = row + (c / 4) * bytes;
      const int sub = static_cast<int>(c % 4);
      const float d = f16_bits_to_f32(ld16(b));
      const float m = type == kQ5_0 ? -16.0f * d : f16_bits_to_f32(ld16(b + 2));
      const uint8_t* qh8 = b + (type == kQ5_0 ? 2 : 4);
      const uint32_t qh = ld16(qh8) | (static_cast<uint32_t>(ld16(qh8 + 2)) << 16);
      ld8(qh8 + 4 + (sub & 1) * 8, w);
      const int shift = sub >= 2 ? 4 : 0;
      for (int i = 0; i < 8; ++i) {
        const int j = sub * 8 + i;
        const uint32_t q = ((byte_of(w, i) >> shift) & 15u) | (((qh >> j) & 1u) << 4);
        out[i] = d * static_cast<float>(q) + m;
      }
      return;
    }
    case kQ8_0: {
      const uint8_t* b = row + (c / 4) * 34;
      const float d = f16_bits_to_f32(ld16(b));
      ld8(b + 2 + (c % 4) * 8, w);
      for (int i = 0; i < 8; ++i)
        out[i] = d * static_cast<float>(static_cast<int8_t>(byte_of(w, i)));
      return;
    }
    case kQ2_K: {
      // Value e of a 256-block: 2 bits at shift 2*((e%128)/32) of
      // qs[(e/128)*32 + e%32]; 16-value groups g have scale/min nibbles scales[g].
      const uint8_t* b = row + (c / 32) * 84;
      const int e = static_cast<int>(c % 32) * 8;
      const float d = f16_bits_to_f32(ld16(b + 80)), dmin = f16_bits_to_f32(ld16(b + 82));
      const int sc = b[e / 16];
      const float dl = d * static_cast<float>(sc & 15), ml = dmin * static_cast<float>(sc >> 4);
      ld8(b + 16 + (e / 128) * 32 + e % 32, w);
      const int shift = 2 * ((e % 128) / 32);
      for (int i = 0; i < 8; ++i)
        out[i] = dl * static_cast<float>((byte_of(w, i) >> shift) & 3u) - ml;
      return;
    }
    case kQ3_K: {
      const uint8_t* b = row + (c / 32) * 110;
      const int e = static_cast<int>(c % 32) * 8;
      const float d = f16_bits_to_f32(ld16(b + 108));
      const int g = e / 16;
      const uint8_t* s = b + 96;
      const int low = g < 8 ? (s[g] & 0x0F) : (s[g - 8] >> 4);
      const int high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
      const float dl = d * static_cast<float>((low | (high << 4)) - 32);
      uint32_t hm[2];
      ld8(b + e % 32, hm);
      ld8(b + 32 + (e / 128) * 32 + e % 32, w);
      const int shift = 2 * ((e % 128) / 32);
      for (int i = 0; i < 8; ++i) {
        const bool hi = (byte_of(hm, i) >> (e / 32)) & 1u;
        const int q = static_cast<int>((byte_of(w, i) >> shift) & 3u) - (hi ? 0 : 4);
        out[i] = dl * static_cast<float>(q);
      }
      return;
    }
    case kQ4_K:
    case kQ5_K: {
      const bool five = type == kQ5_K;
      const uint8_t* b = row + (c / 32) * (five ? 176 : 144);
      const int e = static_cast<int>(c % 32) * 8;
      const float d = f16_bits_to_f32(ld16(b)), dmin = f16_bits_to_f32(ld16(b + 2));
      int sc, mn;
      scale_min_k4(b + 4, e / 32, &sc, &mn);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
      const uint8_t* qs = b + (five ? 48 : 16);
      ld8(qs + (e / 64) * 32 + e % 32, w);
      const int shift = 4 * ((e / 32) % 2);
      uint32_t qh[2] = {0, 0};
      if (five) ld8(b + 16 + e % 32, qh);
      for (int i = 0; i < 8; ++i) {
        uint32_t q = (byte_of(w, i) >> shift) & 15u;
        if (five) q |= ((byte_of(qh, i) >> (e / 32)) & 1u) << 4;
        out[i] = dl * static_cast<float>(q) - ml;
      }
      return;
    }
    case kQ6_K: {
      const uint8_t* b = row + (c / 32) * 210;
      const int e = static_cast<int>(c % 32) * 8;
      const float d = f16_bits_to_f32(ld16(b + 208));
      const float dl = d * static_cast<float>(static_cast<int8_t>(b[192 + e / 16]));
      uint32_t qh[2];
      ld8(b + (e / 128) * 64 + e % 64, w);
      ld8(b + 128 + (e / 128) * 32 + e % 32, qh);
      const int lshift = 4 * ((e % 128) / 64), hshift = 2 * ((e % 128) / 32);
      for (int i = 0; i < 8; ++i) {
        const int q = static_cast<int>(((byte_of(w, i) >> lshift) & 15u) |
                                       (((byte_of(qh, i) >> hshift) & 3u) << 4)) -
                      32;
        out[i] = dl * static_cast<float>(q);
      }
      return;
    }
    default:
      for (int i = 0; i < 8; ++i) out[i] = __int_as_float(0x7fc00000);
  }
}

}  // namespace polyinfer::cuda
