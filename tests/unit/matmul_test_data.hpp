// Seeded random weights and activations for the CPU matmul tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "polyinfer/dtype.hpp"
#include "polyinfer/quant.hpp"
#include "quant_test_util.hpp"

namespace polyinfer::testing {

// Whether the kernels for n_cols activation columns take float activation
// rows: the float types, and Q8_0 when decoding (gemm_q8_0_f32.cpp).
inline bool is_float_type(GgmlType t, int64_t n_cols) {
  return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16 ||
         (t == GgmlType::Q8_0 && n_cols <= 3);
}

// F16 weights multiply F16-rounded activations (the others' float rows are F32).
inline bool f16_activations(GgmlType t) {
  return t == GgmlType::F16;
}

// Block length of the activation rows the type's kernels convert to.
inline int act_block(GgmlType t) {
  return traits(t).block_size == 256 ? 256 : 32;
}

// Row-major float matrix: rows of k.
struct Matrix {
  int64_t k = 0;
  std::vector<float> data;
  const float* row(int64_t i) const { return data.data() + i * k; }
};

// Normal activations with a per-row scale, 1% outliers (x10), never zero.
inline Matrix random_activations(int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  Matrix m{k, std::vector<float>(static_cast<size_t>(k * n))};
  for (int64_t r = 0; r < n; ++r) {
    const float scale = std::pow(10.0f, unit(rng) * 2 - 1);
    for (int64_t e = 0; e < k; ++e) {
      float v = normal(rng) * scale;
      if (unit(rng) < 0.01f) v *= 10;
      if (v == 0.0f) v = scale;
      m.data[r * k + e] = v;
    }
  }
  return m;
}

// Weight rows in a type's stored format (rows `stride` bytes apart, with a
// gap after each row) and their float64 values from dequantize_row.
struct Weights {
  std::vector<uint8_t> bytes;
  size_t stride = 0;
  std::vector<double> values;  // n_rows x k
};

inline std::vector<int> f16_fields(GgmlType t) {
  switch (t) {
    case GgmlType::Q2_K:
      return {80, 82};
    case GgmlType::Q3_K:
      return {108};
    default:
      return {};
  }
}

inline Weights random_weights(GgmlType type, int64_t k, int64_t n_rows, uint32_t seed) {
  Weights w;
  const size_t row_bytes = row_size(type, k);
  w.stride = row_bytes + 16;
  w.bytes.assign(w.stride * static_cast<size_t>(n_rows), 0xEE);
  const Matrix src = random_activations(k, n_rows, seed);
  std::vector<float> deq(static_cast<size_t>(k));
  for (int64_t r = 0; r < n_rows; ++r) {
    uint8_t* row = w.bytes.data() + r * w.stride;
    if (traits(type).quantizable) {
      quantize_row(type, src.row(r), row, k);
    } else {
      const int n_blocks = static_cast<int>(k / traits(type).block_size);
      const auto blocks = random_blocks(type, n_blocks, f16_fields(type), seed + 7919u * r);
      std::copy(blocks.begin(), blocks.end(), row);
    }
    dequantize_row(type, row, deq.data(), k);
    w.values.insert(w.values.end(), deq.begin(), deq.end());
  }
  return w;
}

}  // namespace polyinfer::testing
