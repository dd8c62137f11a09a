// Quantized block layouts, byte for byte as ggml (ggml-common.h) and GGUF files
// store them. All multi-byte fields are little-endian; `d`/`dmin`/`m` are F16 bits.
// Value formulas (ggml-quants.c dequantize_row_*):
//   Q4_0: x = d * (q - 8)             q: 4 bits, low nibbles = elements 0..15
//   Q4_1: x = d * q + m
//   Q5_0: x = d * (q - 16)            q: 4 low bits in qs + 1 high bit in qh
//   Q5_1: x = d * q + m
//   Q8_0: x = d * q                   q: int8
//   Q2_K: x = d*(sc&15) * q - dmin*(sc>>4), 16 groups of 16, q: 2 bits
//   Q3_K: x = d*(s-32) * (q - 4*!hbit), 16 groups of 16, s: 6-bit packed scales
//   Q4_K: x = d*sc * q - dmin*m, 8 groups of 32, sc/m: 6-bit packed in scales[12]
//   Q5_K: as Q4_K with a fifth bit from qh
//   Q6_K: x = d*sc * (q - 32), 16 groups of 16, sc: int8
#pragma once

#include <cstdint>

namespace polyinfer {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK_K = 256;       // super-block size of the K-quants
inline constexpr int kKScaleSize = 12;  // packed 6-bit scales+mins of Q4_K/Q5_K

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK4_1 / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // low nibble scale, high nibble min
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

}  // namespace polyinfer
