// F16/BF16 conversions against a float64 reference.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "polyinfer/fp16.hpp"

namespace polyinfer {
namespace {

// Value of an f16 bit pattern, computed in double from the IEEE definition.
double f16_value(uint16_t h) {
  const int sign = (h & 0x8000) ? -1 : 1;
  const int exp = (h >> 10) & 0x1F;
  const int mant = h & 0x3FF;
  if (exp == 0x1F) return mant ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

TEST(Fp16, EveryHalfDecodesToItsIeeeValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = f16_value(static_cast<uint16_t>(h));
    const float got = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << h;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << h;
    }
  }
}

TEST(Fp16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    if (std::isnan(f16_value(bits))) {
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(fp16_to_fp32(bits))))) << h;
      continue;
    }
    EXPECT_EQ(fp32_to_fp16(fp16_to_fp32(bits)), bits) << h;
  }
}

// Nearest f16 to x by exhaustive search over the finite halves, ties to even mantissa.
uint16_t nearest_f16(double x) {
  if (std::fabs(x) >= 65520.0) return x < 0 ? 0xFC00 : 0x7C00;
  uint16_t best = 0;
  double best_err = INFINITY;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  for (uint16_t mag = 0; mag < 0x7C00; ++mag) {
    const double err = std::fabs(f16_value(sign | mag) - x);
    if (err < best_err || (err == best_err && (mag & 1) == 0)) {
      best = sign | mag;
      best_err = err;
    }
  }
  return best;
}

TEST(Fp16, RandomFloatsRoundToNearestEven) {
  std::mt19937_64 rng(1234);
  std::uniform_int_distribution<int> exp_dist(-30, 17);
  std::uniform_real_distribution<double> mant_dist(1.0, 2.0);
  for (int i = 0; i < 400; ++i) {
    const double v = mant_dist(rng) * std::ldexp(1.0, exp_dist(rng)) * ((i & 1) ? -1 : 1);
    const float f = static_cast<float>(v);
    EXPECT_EQ(fp32_to_fp16(f), nearest_f16(f)) << f;
  }
  // Exact ties: halfway between two halves must pick the even one.
  for (uint16_t h = 1; h < 0x7BFF; h += 97) {
    const double mid = (f16_value(h) + f16_value(h + 1)) / 2;
    EXPECT_EQ(fp32_to_fp16(static_cast<float>(mid)), (h & 1) ? h + 1 : h) << h;
  }
}

TEST(Bf16, MatchesGgmlRounding) {
  std::mt19937 rng(99);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int i = 0; i < 10000; ++i) {
    const float f = dist(rng);
    const uint16_t b = fp32_to_bf16(f);
    const double back = bf16_to_fp32(b);
    // Nearest: no other bf16 neighbour is closer.
    const double up = bf16_to_fp32(b + 1), down = bf16_to_fp32(b - 1);
    EXPECT_LE(std::fabs(back - f), std::fabs(up - f)) << f;
    EXPECT_LE(std::fabs(back - f), std::fabs(down - f)) << f;
  }
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::bit_cast<float>(0x7F800001u)))));
  EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7F80);
}

}  // namespace
}  // namespace polyinfer
