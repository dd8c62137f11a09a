// Helpers shared by the quant tests: seeded random data, float64 decoding of
// the float formats, poisoned buffers.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "polyinfer/dtype.hpp"
#include "polyinfer/fp16.hpp"

namespace polyinfer::testing {

// Value of an IEEE binary16 bit pattern, from the definition, in float64.
inline double f16_value(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  if (exp == 0x1F) return mant ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

// Value of a bfloat16 bit pattern (1 sign, 8 exponent, 7 mantissa bits).
inline double bf16_value(uint16_t b) {
  const double sign = (b & 0x8000) ? -1.0 : 1.0;
  const int exp = (b >> 7) & 0xFF;
  const int mant = b & 0x7F;
  if (exp == 0xFF) return mant ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -133);
  return sign * std::ldexp(128 + mant, exp - 134);
}

inline uint16_t read_u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

// Float64 value the block's f16 field at byte offset `off` holds.
inline double f16_at(const uint8_t* block, int off) {
  return f16_value(read_u16(block + off));
}

// A finite random f16 over many magnitudes (normal * 10^[-4, 1]), as bits.
inline uint16_t random_f16(std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> exponent(-4.0f, 1.0f);
  return fp32_to_fp16(normal(rng) * std::pow(10.0f, exponent(rng)));
}

// Random bytes for n_blocks blocks of `type`, with the f16 fields at the given
// offsets overwritten by finite random values (every other byte is a free bit
// field, valid with any value).
inline std::vector<uint8_t> random_blocks(GgmlType type, int n_blocks,
                                          const std::vector<int>& f16_offsets, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t type_size = traits(type).type_size;
  std::vector<uint8_t> bytes(type_size * static_cast<size_t>(n_blocks));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  for (int i = 0; i < n_blocks; ++i) {
    for (int off : f16_offsets) {
      const uint16_t h = random_f16(rng);
      std::memcpy(bytes.data() + i * type_size + off, &h, 2);
    }
  }
  return bytes;
}

// n samples of N(0,1).
inline std::vector<float> normal_data(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

// N(0,1) with about 1% of the elements scaled by 50: the heavy-tailed weights
// that make per-block scales matter.
inline std::vector<float> outlier_data(size_t n, uint32_t seed) {
  std::vector<float> x = normal_data(n, seed);
  std::mt19937 rng(seed ^ 0x9E3779B9u);
  std::uniform_int_distribution<size_t> index(0, n - 1);
  for (size_t k = 0; k < n / 100 + 1; ++k) x[index(rng)] *= 50.0f;
  return x;
}

inline std::vector<float> nan_filled(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

}  // namespace polyinfer::testing
