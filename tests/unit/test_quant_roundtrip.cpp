// quantize_row -> dequantize_row error bounds on seeded N(0,1) data and on
// N(0,1) data with 1% outliers (x50). The bounds, derived below and listed in
// docs/QUANT_FORMATS.md, are checked per element (plain and 32-element block
// types) or as an RMSE relative to the data's RMS (K-quants).
//
// Notation: amax = max |x| of the block, fp16(v) = v rounded to F16 and back,
// eps = 1e-6 * amax absorbs float32 rounding in the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "polyinfer/quant.hpp"
#include "quant_test_util.hpp"

namespace polyinfer {
namespace {

constexpr size_t kN = 8192;  // 32 super-blocks, 256 legacy blocks

double fp16_rt(double v) {
  return testing::f16_value(fp32_to_fp16(static_cast<float>(v)));
}

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x) {
  const auto n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> q(row_size(type, n), 0xAB);
  quantize_row(type, x.data(), q.data(), n);
  std::vector<float> y = testing::nan_filled(x.size());
  dequantize_row(type, q.data(), y.data(), n);
  return y;
}

// Per-element bound of block [x, x + bs): bound(block, element index).
using BlockBound = std::function<double(const float* block, int j)>;

// Checks |y - x| <= bound for every element; returns the largest error / bound.
double check_elementwise(GgmlType type, const std::vector<float>& x, int bs,
                         const BlockBound& bound) {
  const std::vector<float> y = round_trip(type, x);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double err = std::fabs(static_cast<double>(y[i]) - x[i]);
    const double b = bound(x.data() + (i / bs) * bs, static_cast<int>(i % bs));
    EXPECT_LE(err, b) << type_name(type) << " element " << i << " x=" << x[i] << " y=" << y[i];
    if (!(err <= b)) return INFINITY;
    worst = std::max(worst, err / b);
  }
  return worst;
}

double block_amax(const float* b, int bs) {
  double amax = 0;
  for (int j = 0; j < bs; ++j) amax = std::max(amax, std::fabs(static_cast<double>(b[j])));
  return amax;
}

// Q8_0: q = round(x / d), d = amax/127, so |x - d*q| <= d/2; the stored
// scale is fp16(d), adding |q| * |d - fp16(d)| <= 127 * |d - fp16(d)|.
double q8_0_bound(const float* b, int) {
  const double amax = block_amax(b, 32);
  const double d = amax / 127;
  return d / 2 + 127 * std::fabs(d - fp16_rt(d)) + 1e-6 * amax;
}

// Q4_0 (levels = 8) and Q5_0 (levels = 16): d = amax/levels, the largest |x|
// maps to -levels; x*id lies in [-levels, levels] and rounds to within d/2,
// except that codes above levels-1 are clipped: elements of sign opposite to
// the max with |x| > (levels - 0.5)/levels * amax err by up to d. Elements with
// |x| <= 0.9 amax are always within d/2. Scale rounding adds levels*|d - fp16(d)|.
BlockBound symmetric_bound(int levels) {
  return [levels](const float* b, int j) {
    const double amax = block_amax(b, 32);
    const double d = amax / levels;
    const double rounding = std::fabs(b[j]) <= 0.9 * amax ? d / 2 : d;
    return rounding + levels * std::fabs(d - fp16_rt(d)) + 1e-6 * amax;
  };
}

// Q4_1 (top = 15) and Q5_1 (top = 31): d = (max - min)/top, q = round((x - min)/d)
// never clips, so |x - (min + d*q)| <= d/2; storing fp16(min) and fp16(d) adds
// |min - fp16(min)| + top * |d - fp16(d)|.
BlockBound offset_bound(int top) {
  return [top](const float* b, int) {
    const auto [lo, hi] = std::minmax_element(b, b + 32);
    const double min = *lo;
    const double d = (static_cast<double>(*hi) - min) / top;
    return d / 2 + std::fabs(min - fp16_rt(min)) + top * std::fabs(d - fp16_rt(d)) +
           1e-6 * block_amax(b, 32);
  };
}

struct ElementwiseCase {
  GgmlType type;
  int block_size;
  BlockBound bound;
};

std::vector<ElementwiseCase> elementwise_cases() {
  // F32 is exact; F16 rounds to 11 significant bits (2^-11 relative, 2^-25
  // absolute among subnormals); BF16 to 8 bits (2^-8 relative).
  return {
      {GgmlType::F32, 1, [](const float*, int) { return 0.0; }},
      {GgmlType::F16, 1,
       [](const float* b, int) {
         return std::max(std::ldexp(std::fabs(static_cast<double>(b[0])), -11), 0x1p-25);
       }},
      {GgmlType::BF16, 1, [](const float* b, int) { return std::ldexp(std::fabs(b[0]), -8); }},
      {GgmlType::Q4_0, 32, symmetric_bound(8)},
      {GgmlType::Q4_1, 32, offset_bound(15)},
      {GgmlType::Q5_0, 32, symmetric_bound(16)},
      {GgmlType::Q5_1, 32, offset_bound(31)},
      {GgmlType::Q8_0, 32, q8_0_bound},
  };
}

TEST(QuantRoundTrip, ElementwiseBoundsOnNormalAndOutlierData) {
  for (const ElementwiseCase& c : elementwise_cases()) {
    for (uint32_t seed : {21u, 22u}) {
      const double normal =
          check_elementwise(c.type, testing::normal_data(kN, seed), c.block_size, c.bound);
      const double outliers =
          check_elementwise(c.type, testing::outlier_data(kN, seed), c.block_size, c.bound);
      // Worst error as a fraction of its bound, for the docs.
      RecordProperty(
          std::string(type_name(c.type)) + "_worst_err_over_bound_seed" + std::to_string(seed),
          std::to_string(std::max(normal, outliers)));
    }
  }
}

// RMSE of the round trip relative to the RMS of the data.
double relative_rmse(GgmlType type, const std::vector<float>& x) {
  const std::vector<float> y = round_trip(type, x);
  double err2 = 0, x2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_TRUE(std::isfinite(y[i])) << type_name(type) << " element " << i;
    const double e = static_cast<double>(y[i]) - x[i];
    err2 += e * e;
    x2 += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(err2 / x2);
}

struct RmseCase {
  GgmlType type;
  double normal_bound;   // relative RMSE bound on N(0,1) data
  double outlier_bound;  // relative RMSE bound on data with 1% x50 outliers
};

// Bounds = the worst measured relative RMSE over seeds 31 and 32 (listed in
// docs/QUANT_FORMATS.md) plus about 25%. On outlier data the RMS is dominated
// by the outliers, and a super-block holding one crushes the scales of its
// other sub-blocks (ggml's reference does the same), so it varies by seed.
constexpr RmseCase kRmseCases[] = {
    {GgmlType::Q4_K, 0.090, 0.093},
    {GgmlType::Q5_K, 0.045, 0.065},
    {GgmlType::Q6_K, 0.0225, 0.042},
};

TEST(QuantRoundTrip, KQuantRelativeRmse) {
  for (const RmseCase& c : kRmseCases) {
    for (uint32_t seed : {31u, 32u}) {
      const double normal = relative_rmse(c.type, testing::normal_data(kN, seed));
      const double outliers = relative_rmse(c.type, testing::outlier_data(kN, seed));
      EXPECT_LE(normal, c.normal_bound) << type_name(c.type) << " seed " << seed;
      EXPECT_LE(outliers, c.outlier_bound) << type_name(c.type) << " seed " << seed;
      RecordProperty(std::string(type_name(c.type)) + "_rel_rmse_seed" + std::to_string(seed),
                     std::to_string(normal) + " normal, " + std::to_string(outliers) + " outliers");
      std::printf("%s seed %u: relative RMSE %.5f (normal), %.5f (outliers)\n",
                  std::string(type_name(c.type)).c_str(), seed, normal, outliers);
    }
  }
}

// Every byte of the output is written: two different poison patterns must
// give the same bytes.
TEST(QuantRoundTrip, QuantizeWritesEveryByte) {
  const std::vector<float> x = testing::normal_data(1024, 41);
  for (GgmlType type : kComputeTypes) {
    if (!traits(type).quantizable) continue;
    const size_t bytes = row_size(type, 1024);
    std::vector<uint8_t> a(bytes, 0xAB), b(bytes, 0x00);
    quantize_row(type, x.data(), a.data(), 1024);
    quantize_row(type, x.data(), b.data(), 1024);
    EXPECT_EQ(a, b) << type_name(type);
  }
}

// Edge blocks: a constant block reconstructs to within the type's step, and an
// all-zero block (which takes the d == 0 paths) reconstructs to exact zeros.
TEST(QuantRoundTrip, ConstantAndZeroBlocks) {
  for (GgmlType type : kComputeTypes) {
    if (!traits(type).quantizable) continue;
    std::vector<float> x(512, 0.7f);
    std::fill(x.begin() + 256, x.end(), 0.0f);
    const std::vector<float> y = round_trip(type, x);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_NEAR(y[i], x[i], 0.7 / 8) << type_name(type) << " element " << i;
      if (i >= 256) {
        ASSERT_EQ(y[i], 0.0f) << type_name(type) << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace polyinfer
