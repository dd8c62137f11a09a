// dequantize_row against an independent float64 decoding of each block layout,
// written here from ggml-common.h / ggml-quants.c (loop structure of ggml's
// dequantize_row_*, not of polyinfer's kernels), on seeded random valid blocks.
//
// Tolerance: |got - want| <= 1e-6 * mag, where mag is the sum of the absolute
// values of the formula's terms (e.g. |d*sc*q| + |dmin*m|). The kernel does at
// most three float32 roundings of at most 2^-24 relative each, well inside it.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "polyinfer/quant.hpp"
#include "quant_test_util.hpp"

namespace polyinfer {
namespace {

using testing::f16_at;

// Decodes one block: writes block_size values and term magnitudes.
using Decoder = std::function<void(const uint8_t* block, double* y, double* mag)>;

struct DequantCase {
  GgmlType type;
  std::vector<int> f16_offsets;  // byte offsets of f16 fields in a block
  Decoder decode;
};

void set(double* y, double* mag, int i, double value, double magnitude) {
  y[i] = value;
  mag[i] = magnitude;
}

void decode_f32(const uint8_t* b, double* y, double* mag) {
  float f;
  std::memcpy(&f, b, 4);
  set(y, mag, 0, f, std::fabs(f));
}

void decode_f16(const uint8_t* b, double* y, double* mag) {
  const double v = f16_at(b, 0);
  set(y, mag, 0, v, std::fabs(v));
}

void decode_bf16(const uint8_t* b, double* y, double* mag) {
  const double v = testing::bf16_value(testing::read_u16(b));
  set(y, mag, 0, v, std::fabs(v));
}

void decode_q4_0(const uint8_t* b, double* y, double* mag) {
  const double d = f16_at(b, 0);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    const double v0 = d * ((qs[j] & 0x0F) - 8);
    const double v1 = d * ((qs[j] >> 4) - 8);
    set(y, mag, j, v0, std::fabs(v0));
    set(y, mag, j + 16, v1, std::fabs(v1));
  }
}

void decode_q4_1(const uint8_t* b, double* y, double* mag) {
  const double d = f16_at(b, 0);
  const double m = f16_at(b, 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    set(y, mag, j, d * (qs[j] & 0x0F) + m, std::fabs(d * (qs[j] & 0x0F)) + std::fabs(m));
    set(y, mag, j + 16, d * (qs[j] >> 4) + m, std::fabs(d * (qs[j] >> 4)) + std::fabs(m));
  }
}

uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// Q5_0/Q5_1 codes as ggml forms them: fifth bit of element j is qh bit j.
void five_bit_codes(const uint8_t* qh_bytes, const uint8_t* qs, int* q) {
  const uint32_t qh = read_u32(qh_bytes);
  for (int j = 0; j < 16; ++j) {
    const int xh0 = ((qh >> j) << 4) & 0x10;
    const int xh1 = (qh >> (j + 12)) & 0x10;
    q[j] = (qs[j] & 0x0F) | xh0;
    q[j + 16] = (qs[j] >> 4) | xh1;
  }
}

void decode_q5_0(const uint8_t* b, double* y, double* mag) {
  const double d = f16_at(b, 0);
  int q[32];
  five_bit_codes(b + 2, b + 6, q);
  for (int j = 0; j < 32; ++j) set(y, mag, j, d * (q[j] - 16), std::fabs(d * (q[j] - 16)));
}

void decode_q5_1(const uint8_t* b, double* y, double* mag) {
  const double d = f16_at(b, 0);
  const double m = f16_at(b, 2);
  int q[32];
  five_bit_codes(b + 4, b + 8, q);
  for (int j = 0; j < 32; ++j) set(y, mag, j, d * q[j] + m, std::fabs(d * q[j]) + std::fabs(m));
}

void decode_q8_0(const uint8_t* b, double* y, double* mag) {
  const double d = f16_at(b, 0);
  for (int j = 0; j < 32; ++j) {
    const double v = d * static_cast<int8_t>(b[2 + j]);
    set(y, mag, j, v, std::fabs(v));
  }
}

void decode_q2_k(const uint8_t* b, double* y, double* mag) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const double d = f16_at(b, 80);
  const double dmin = f16_at(b, 82);
  int is = 0;
  int out = 0;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = scales[is++];
        const double dl = d * (sc & 0x0F);
        const double ml = dmin * (sc >> 4);
        for (int l = 0; l < 16; ++l) {
          const int code = (q[l + 16 * half] >> shift) & 3;
          set(y, mag, out++, dl * code - ml, std::fabs(dl * code) + std::fabs(ml));
        }
      }
    }
    q += 32;
  }
}

// Q3_K's sixteen 6-bit scales, unpacked 32 bits at a time with ggml's masks.
void q3_k_scales(const uint8_t* packed, int8_t* scales) {
  constexpr uint32_t kmask1 = 0x03030303;
  constexpr uint32_t kmask2 = 0x0f0f0f0f;
  uint32_t aux[4] = {read_u32(packed), read_u32(packed + 4), read_u32(packed + 8), 0};
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  for (int i = 0; i < 16; ++i)
    scales[i] = static_cast<int8_t>((aux[i / 4] >> (8 * (i % 4))) & 0xFF);
}

void decode_q3_k(const uint8_t* b, double* y, double* mag) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  int8_t scales[16];
  q3_k_scales(b + 96, scales);
  const double d = f16_at(b, 108);
  int is = 0;
  int out = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const double dl = d * (scales[is++] - 32);
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          const int code = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
          set(y, mag, out++, dl * code, std::fabs(dl * code));
        }
      }
      m = static_cast<uint8_t>(m << 1);
    }
    q += 32;
  }
}

// Scale and min j of Q4_K/Q5_K: 6 bits each, low 4 of j >= 4 in bytes 8-11,
// the top 2 bits of those in the top bits of bytes 0-7.
void k4_scale_min(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q4_K and Q5_K: qh == nullptr for Q4_K.
void decode_k4(const uint8_t* b, const uint8_t* qh, const uint8_t* ql, double* y, double* mag) {
  const double d = f16_at(b, 0);
  const double dmin = f16_at(b, 2);
  int out = 0;
  uint8_t u1 = 1;
  uint8_t u2 = 2;
  for (int is = 0; is < 8; is += 2) {
    for (int half = 0; half < 2; ++half) {
      int sc, m;
      k4_scale_min(b + 4, is + half, &sc, &m);
      const double dl = d * sc;
      const double ml = dmin * m;
      const uint8_t u = half ? u2 : u1;
      for (int l = 0; l < 32; ++l) {
        const int code = (half ? ql[l] >> 4 : ql[l] & 0x0F) + (qh && (qh[l] & u) ? 16 : 0);
        set(y, mag, out++, dl * code - ml, std::fabs(dl * code) + std::fabs(ml));
      }
    }
    ql += 32;
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

void decode_q4_k(const uint8_t* b, double* y, double* mag) {
  decode_k4(b, nullptr, b + 16, y, mag);
}
void decode_q5_k(const uint8_t* b, double* y, double* mag) {
  decode_k4(b, b + 16, b + 48, y, mag);
}

void decode_q6_k(const uint8_t* b, double* y, double* mag) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const double d = f16_at(b, 208);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q[4] = {((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32,
                        ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32,
                        ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32,
                        ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32};
      for (int k = 0; k < 4; ++k) {
        const double v = d * sc[is + 2 * k] * q[k];
        set(y, mag, n + l + 32 * k, v, std::fabs(v));
      }
    }
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

std::vector<DequantCase> cases() {
  return {
      {GgmlType::F32, {}, decode_f32},         {GgmlType::F16, {0}, decode_f16},
      {GgmlType::BF16, {}, decode_bf16},       {GgmlType::Q4_0, {0}, decode_q4_0},
      {GgmlType::Q4_1, {0, 2}, decode_q4_1},   {GgmlType::Q5_0, {0}, decode_q5_0},
      {GgmlType::Q5_1, {0, 2}, decode_q5_1},   {GgmlType::Q8_0, {0}, decode_q8_0},
      {GgmlType::Q2_K, {80, 82}, decode_q2_k}, {GgmlType::Q3_K, {108}, decode_q3_k},
      {GgmlType::Q4_K, {0, 2}, decode_q4_k},   {GgmlType::Q5_K, {0, 2}, decode_q5_k},
      {GgmlType::Q6_K, {208}, decode_q6_k},
  };
}

// Random F32/BF16 bit patterns may be inf/NaN; clearing the top exponent bit
// makes them finite while keeping the rest random.
void make_plain_floats_finite(GgmlType type, std::vector<uint8_t>& bytes) {
  if (type == GgmlType::F32) {
    for (size_t i = 0; i < bytes.size(); i += 4) {
      if ((bytes[i + 3] & 0x7F) == 0x7F && (bytes[i + 2] & 0x80)) bytes[i + 3] &= 0xBF;
    }
  } else if (type == GgmlType::BF16) {
    for (size_t i = 0; i < bytes.size(); i += 2) {
      if ((bytes[i + 1] & 0x7F) == 0x7F && (bytes[i] & 0x80)) bytes[i + 1] &= 0xBF;
    }
  }
}

class Dequantize : public ::testing::TestWithParam<DequantCase> {};

TEST_P(Dequantize, MatchesFloat64DecodingOfTheLayout) {
  const DequantCase& c = GetParam();
  const TypeTraits& t = traits(c.type);
  const int n_blocks = t.block_size == 1 ? 512 : 48;
  const auto n = static_cast<size_t>(n_blocks * t.block_size);
  for (uint32_t seed : {11u, 12u, 13u}) {
    std::vector<uint8_t> blocks = testing::random_blocks(c.type, n_blocks, c.f16_offsets, seed);
    make_plain_floats_finite(c.type, blocks);
    std::vector<float> got = testing::nan_filled(n);
    dequantize_row(c.type, blocks.data(), got.data(), static_cast<int64_t>(n));

    std::vector<double> want(n), mag(n);
    for (int i = 0; i < n_blocks; ++i) {
      c.decode(blocks.data() + i * t.type_size, want.data() + i * t.block_size,
               mag.data() + i * t.block_size);
    }
    size_t nonzero = 0;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(std::isfinite(want[i])) << "seed " << seed << " element " << i;
      ASSERT_NEAR(got[i], want[i], 1e-6 * mag[i]) << "seed " << seed << " element " << i;
      nonzero += want[i] != 0;
    }
    EXPECT_GT(nonzero, n / 2) << "random blocks should decode to mostly nonzero values";
  }
}

INSTANTIATE_TEST_SUITE_P(AllComputeTypes, Dequantize, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<DequantCase>& info) {
                           return std::string(type_name(info.param.type));
                         });

}  // namespace
}  // namespace polyinfer
