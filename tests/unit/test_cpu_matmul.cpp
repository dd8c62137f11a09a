// CPU matmul kernels (matmul_kernels(type)) for every weight type, on every
// Highway target this CPU runs (each test repeats per target), against
// float64 references on seeded random data.
//
// Weights: quantize_row of random floats (Q2_K/Q3_K, which have no reference
// quantizer: random bytes with finite random f16 scales). Activations:
// random normal floats with 1% outliers (x10), never zero.
//
// Two checks per output, with A the F32 activations, Aq the activations as
// the kernel sees them (decoded from the converted rows: d[b] * qs[e]; the
// F16-rounded A for F16 weights; A itself for F32 and BF16 weights) and W the
// dequantize_row weights:
//  1. kernel arithmetic: |got - W.Aq| <= 1e-5 * |W|.|Aq|. Integer dots are
//     exact; what remains is float32 rounding of per-group products and sums
//     (a few 2^-24 per term, accumulated over at most k/16 groups per lane).
//  2. activation quantization: every |A - Aq| <= d * (1/2 + 3e-5) (round to
//     nearest; the slack covers float32 rounding of x * 127 / max and of d;
//     for F16 rows d is the F16 spacing at A, without slack),
//     |got - W.A| <= sum |W| |A - Aq| + 1e-5 |W|.|A| (the exact bound), and
//     |got - W.A| <= 6 sigma + 1e-5 |W|.|A| with sigma^2 = sum W^2 d^2 / 12,
//     the spread of independent rounding errors uniform in +-d/2: the error
//     is that of rounding to nearest, not merely bounded. (Relative to
//     |W|.|A| that is about 1e-3 typical, 1.5e-2 worst over 18k outputs at
//     k=256 with 32-blocks: 1% outliers make some blocks' steps 10x coarser.)
// dst is poisoned with NaN and has a padded stride, so unwritten outputs and
// writes outside the n_rows x n_cols tile both fail.
#include <gtest/gtest.h>

#define HWY_WANT_AVX3_DL
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/matmul_kernels.hpp"
#include "matmul_test_data.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer::cpu {
namespace {

using testing::Matrix;

// The activations the kernel multiplies: decoded from a converted row.
std::vector<double> decode_act(GgmlType type, int64_t n_cols, const uint8_t* row, int64_t k) {
  std::vector<double> out(static_cast<size_t>(k));
  if (testing::f16_activations(type)) {
    for (int64_t e = 0; e < k; ++e) out[e] = testing::f16_value(testing::read_u16(row + 2 * e));
    return out;
  }
  if (testing::is_float_type(type, n_cols)) {
    const auto* x = reinterpret_cast<const float*>(row);
    for (int64_t e = 0; e < k; ++e) out[e] = x[e];
    return out;
  }
  const ActLayout layout = act_layout(k, testing::act_block(type));
  const ActRow a = act_row(row, layout);
  for (int64_t e = 0; e < k; ++e) out[e] = double{a.d[e / layout.block]} * a.qs[e];
  return out;
}

// The quantization step of each element: d of its block for the integer
// rows, the F16 spacing at the element for F16 rows, 0 for F32 rows.
std::vector<double> act_step(GgmlType type, int64_t n_cols, const float* x, const uint8_t* row,
                             int64_t k) {
  std::vector<double> out(static_cast<size_t>(k), 0.0);
  if (testing::f16_activations(type)) {
    // 2^-10 of the binade (|x| >= 2^-14), 2^-24 below (subnormals).
    for (int64_t e = 0; e < k; ++e) {
      out[e] = std::ldexp(1.0, std::max(std::ilogb(x[e]), -14) - 10);
    }
    return out;
  }
  if (testing::is_float_type(type, n_cols)) return out;
  const ActLayout layout = act_layout(k, testing::act_block(type));
  const ActRow a = act_row(row, layout);
  for (int64_t e = 0; e < k; ++e) out[e] = a.d[e / layout.block];
  return out;
}

// Checks the converted row's sums and that each code is the nearest one.
void check_act_row(GgmlType type, int64_t n_cols, const float* x, const uint8_t* row, int64_t k) {
  if (testing::f16_activations(type)) {
    for (int64_t e = 0; e < k; ++e) {
      const double step = std::ldexp(1.0, std::max(std::ilogb(x[e]), -14) - 10);
      ASSERT_LE(std::fabs(x[e] - testing::f16_value(testing::read_u16(row + 2 * e))), step / 2)
          << "element " << e;
    }
    return;
  }
  if (testing::is_float_type(type, n_cols)) return;
  const ActLayout layout = act_layout(k, testing::act_block(type));
  const ActRow a = act_row(row, layout);
  for (int64_t g = 0; g < k / 16; ++g) {
    int32_t s = 0;
    for (int j = 0; j < 16; ++j) s += a.qs[16 * g + j];
    ASSERT_EQ(a.isum16[g], s);
    ASSERT_EQ(a.fsum16[g], static_cast<float>(s));
  }
  for (int64_t g = 0; g < k / 32; ++g) {
    ASSERT_EQ(a.isum32[g], a.isum16[2 * g] + a.isum16[2 * g + 1]);
    ASSERT_EQ(a.fsum32[g], static_cast<float>(a.isum32[g]));
  }
  for (int64_t b = 0; b < k / layout.block; ++b) {
    double amax = 0;
    for (int j = 0; j < layout.block; ++j)
      amax = std::max(amax, std::fabs(double{x[b * layout.block + j]}));
    const double d = a.d[b];
    ASSERT_NEAR(d, amax / 127, amax / 127 * 1e-6);
    for (int j = 0; j < layout.block; ++j) {
      const int64_t e = b * layout.block + j;
      ASSERT_LE(std::fabs(x[e] - d * a.qs[e]), d * (0.5 + 3e-5) + 1e-30) << "element " << e;
    }
  }
}

struct Shape {
  int64_t k, n_rows, n_cols;
};

void run_case(GgmlType type, const Shape& s, uint32_t seed) {
  SCOPED_TRACE(std::string(type_name(type)) + " k=" + std::to_string(s.k) +
               " rows=" + std::to_string(s.n_rows) + " cols=" + std::to_string(s.n_cols));
  const MatmulKernels* kern = matmul_kernels(type, s.n_cols);
  ASSERT_NE(kern, nullptr);
  const testing::Weights w = testing::random_weights(type, s.k, s.n_rows, seed);
  const Matrix x = testing::random_activations(s.k, s.n_cols, seed + 1);

  // Converted rows with a stride beyond the row size (kept 64-byte aligned).
  const size_t a_stride = kern->act_row_size(s.k) + 64;
  ASSERT_EQ(kern->act_row_size(s.k) % 64, 0u);
  std::vector<uint8_t> act(a_stride * static_cast<size_t>(s.n_cols) + 64);
  uint8_t* act0 = act.data() + (64 - reinterpret_cast<uintptr_t>(act.data()) % 64) % 64;
  for (int64_t c = 0; c < s.n_cols; ++c) {
    kern->convert_act(x.row(c), act0 + c * a_stride, s.k);
    check_act_row(type, s.n_cols, x.row(c), act0 + c * a_stride, s.k);
  }

  const size_t dst_stride = static_cast<size_t>(s.n_rows) + 5;
  std::vector<float> dst(dst_stride * static_cast<size_t>(s.n_cols + 1),
                         std::numeric_limits<float>::quiet_NaN());
  kern->gemm(s.k, w.bytes.data(), w.stride, s.n_rows, act0, a_stride, s.n_cols, dst.data(),
             dst_stride);

  for (int64_t c = 0; c < s.n_cols; ++c) {
    const std::vector<double> aq = decode_act(type, s.n_cols, act0 + c * a_stride, s.k);
    const std::vector<double> step = act_step(type, s.n_cols, x.row(c), act0 + c * a_stride, s.k);
    for (int64_t r = 0; r < s.n_rows; ++r) {
      const double* wr = w.values.data() + r * s.k;
      double ref_q = 0, mag_q = 0, ref = 0, mag = 0, quant_err = 0, var = 0;
      for (int64_t e = 0; e < s.k; ++e) {
        ref_q += wr[e] * aq[e];
        mag_q += std::fabs(wr[e] * aq[e]);
        ref += wr[e] * x.row(c)[e];
        mag += std::fabs(wr[e] * x.row(c)[e]);
        quant_err += std::fabs(wr[e]) * std::fabs(x.row(c)[e] - aq[e]);
        var += wr[e] * wr[e] * step[e] * step[e] / 12;
      }
      const double got = dst[c * dst_stride + r];
      ASSERT_LE(std::fabs(got - ref_q), 1e-5 * mag_q) << "row " << r << " col " << c;
      ASSERT_LE(std::fabs(got - ref), quant_err + 1e-5 * mag) << "row " << r << " col " << c;
      ASSERT_LE(std::fabs(got - ref), 6 * std::sqrt(var) + 1e-5 * mag)
          << "row " << r << " col " << c;
    }
  }
  for (size_t i = 0; i < dst.size(); ++i) {
    const bool inside = static_cast<int64_t>(i % dst_stride) < s.n_rows &&
                        static_cast<int64_t>(i / dst_stride) < s.n_cols;
    if (!inside) {
      ASSERT_TRUE(std::isnan(dst[i])) << "write outside the tile at " << i;
    }
  }
}

// Runs fn once per Highway target this CPU supports (all compiled in).
template <class Fn>
void for_each_target(Fn fn) {
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    EXPECT_STREQ(simd_target_name(), hwy::TargetName(target));
    fn();
    if (::testing::Test::HasFatalFailure()) break;
  }
  hwy::SetSupportedTargetsForTest(0);
}

class MatmulKernelTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MatmulKernelTest, SmallShapesAllColumnCounts) {
  const GgmlType type = GetParam();
  const int64_t block = traits(type).block_size;
  std::vector<int64_t> ks = {256, 512};
  if (block == 32) ks.push_back(96);  // a vector wider than what is left of k
  if (block == 1) ks.push_back(77);   // k not a multiple of any vector length
  for_each_target([&] {
    uint32_t seed = 1000;
    for (const int64_t k : ks) {
      for (const int64_t n_cols : {1, 3, 17, 64, 130}) {
        for (const int64_t n_rows : {5, 37}) {
          run_case(type, {k, n_rows, n_cols}, seed++);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  });
}

// The benchmark models' types (Q4_K_M is Q4_K + Q6_K) at a real model width.
class MatmulWideTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MatmulWideTest, WideRows) {
  for_each_target([&] {
    // 150 rows: several repacked row tiles of the register-blocked path.
    for (const int64_t n_cols : {1, 17}) {
      run_case(GetParam(), {4096, 150, n_cols}, 77 + static_cast<uint32_t>(n_cols));
      if (::testing::Test::HasFatalFailure()) return;
    }
  });
}

TEST(MatmulKernels, UnsupportedTypesHaveNone) {
  EXPECT_EQ(matmul_kernels(GgmlType::Q8_K, 1), nullptr);
  EXPECT_EQ(matmul_kernels(GgmlType::IQ4_NL, 1), nullptr);
  EXPECT_EQ(matmul_kernels(GgmlType::I32, 1), nullptr);
}

TEST(MatmulKernels, TargetNameIsAHighwayTarget) {
  const std::string name = simd_target_name();
  bool known = false;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets())
    known |= name == hwy::TargetName(target);
  EXPECT_TRUE(known) << name;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulKernelTest, ::testing::ValuesIn(kComputeTypes),
                         [](const auto& info) { return std::string(type_name(info.param)); });
INSTANTIATE_TEST_SUITE_P(BenchmarkTypes, MatmulWideTest,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::F16,
                                           GgmlType::Q4_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

}  // namespace
}  // namespace polyinfer::cpu
