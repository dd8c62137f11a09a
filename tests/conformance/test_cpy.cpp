// CPY: src -> dst of the same shape, converting the type, any row strides on
// either side (how K/V enter the KV cache). F32 -> F16/BF16 rounds to nearest
// even; F32 -> Q8_0 stores per 32-block d = amax/127 (F16) and q = round(x/d);
// F16 -> F32 is exact. Destinations are views with gaps between rows, which
// must keep their poison.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

// x rounded to nearest even in a binary format with `mantissa` stored bits and
// smallest normal exponent `min_exp` (subnormals below it): scaling by the
// quantum at x's exponent is exact in float64, as is nearbyint's tie to even.
double round_to_format(double x, int mantissa, int min_exp) {
  if (x == 0) return x;
  int e;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  const double quantum = std::ldexp(1.0, std::max(e - 1, min_exp) - mantissa);
  return std::nearbyint(x / quantum) * quantum;
}

double round_f16(double x) {
  return round_to_format(x, 10, -14);
}
double round_bf16(double x) {
  return round_to_format(x, 7, -126);
}

struct CpyCase {
  std::string name;
  GgmlType from, to;
  bool permuted_src;  // src a [K, 5, 3] view of a [K, 3, 5] tensor
};

constexpr Shape kShape{64, 5, 3, 1};

// A view of kShape with a gap after every row and every plane.
HostTensor gapped(GgmlType type) {
  const uint64_t nb1 = row_size(type, kShape[0]) + 32, nb2 = nb1 * kShape[1] + 16;
  const uint64_t nb3 = nb2 * kShape[2];
  return strided(type, kShape, {traits(type).type_size, nb1, nb2, nb3}, kLeadBytes,
                 kLeadBytes + nb3);
}

HostTensor source(const CpyCase& c) {
  if (!c.permuted_src) return contiguous(c.from, kShape);
  const uint64_t row = row_size(c.from, kShape[0]);
  const Strides nb{traits(c.from).type_size, row * kShape[2], row, row * kShape[1] * kShape[2]};
  return strided(c.from, kShape, nb, kLeadBytes, kLeadBytes + nb[3]);
}

// Magnitudes over 10 decades (F16 subnormals to 10^4) and exact ties of the
// target format in row 0 (1 + half an ulp rounds down to even, 1 + 3/2 ulp up).
void fill_source(HostTensor& src, const CpyCase& c, Rng& rng) {
  fill_normal(src, rng);
  if (src.type != GgmlType::F32) return;
  std::uniform_real_distribution<double> decade(-6, 4);
  for (int64_t i2 = 0; i2 < kShape[2]; ++i2) {
    for (int64_t i1 = 0; i1 < kShape[1]; ++i1) {
      for (int64_t i0 = 0; i0 < kShape[0]; ++i0) {
        src.f32(i0, i1, i2) *= static_cast<float>(std::pow(10.0, decade(rng)));
      }
    }
  }
  const float half_ulp = c.to == GgmlType::BF16 ? 0x1p-8f : 0x1p-11f;
  src.f32(0) = 1 + half_ulp;
  src.f32(1) = 1 + 3 * half_ulp;
  src.f32(2) = -(1 + half_ulp);
}

// want and bound for one source row.
void reference_row(const CpyCase& c, const std::vector<double>& x, std::vector<double>& want,
                   std::vector<double>& bound) {
  for (size_t i = 0; i < x.size(); ++i) {
    if (c.to == GgmlType::Q8_0) {
      const size_t b = i / 32 * 32;
      double amax = 0;
      for (size_t j = b; j < b + 32; ++j) amax = std::max(amax, std::fabs(x[j]));
      want.push_back(x[i]);
      bound.push_back(cpy_q8_0_bound(amax, round_f16(amax / 127)));
    } else {
      want.push_back(c.to == GgmlType::F16    ? round_f16(x[i])
                     : c.to == GgmlType::BF16 ? round_bf16(x[i])
                                              : x[i]);
      bound.push_back(0.0);
    }
  }
}

// gtest names a failing case by this instead of its bytes.
void PrintTo(const CpyCase& c, std::ostream* os) {
  *os << c.name;
}

class Cpy : public ConformanceTestWithParam<CpyCase> {};

TEST_P(Cpy, MatchesReference) {
  const CpyCase& c = GetParam();
  Rng rng(case_seed("CPY/" + c.name));
  HostTensor src = source(c);
  fill_source(src, c, rng);
  HostTensor dst = gapped(c.to);
  pi_node node{};
  node.op = PI_OP_CPY;
  const NodeRun r = backend().run(node, {&src}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  std::vector<double> want, bound;
  for (int64_t i2 = 0; i2 < kShape[2]; ++i2) {
    for (int64_t i1 = 0; i1 < kShape[1]; ++i1) {
      reference_row(c, src.row_values(i1, i2), want, bound);
    }
  }
  expect_output(dst, want, bound, "CPY " + c.name);
}

const CpyCase kCases[] = {
    {"f32_to_f16", GgmlType::F32, GgmlType::F16, false},
    {"f32_to_f16_permuted_src", GgmlType::F32, GgmlType::F16, true},
    {"f32_to_bf16", GgmlType::F32, GgmlType::BF16, false},
    {"f32_to_q8_0", GgmlType::F32, GgmlType::Q8_0, false},
    {"f16_to_f32", GgmlType::F16, GgmlType::F32, false},
    {"f32_to_f32_permuted_src", GgmlType::F32, GgmlType::F32, true},
};

INSTANTIATE_TEST_SUITE_P(Types, Cpy, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace polyinfer::conformance
