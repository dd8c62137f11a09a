#include "random_data.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "polyinfer/fp16.hpp"
#include "polyinfer/quant.hpp"
#include "polyinfer/quant_blocks.hpp"

namespace polyinfer::conformance {
namespace {

// Byte offsets of a block's F16 scale fields (ggml-common.h layouts).
std::vector<size_t> f16_fields(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_0:
      return {offsetof(BlockQ4_0, d)};
    case GgmlType::Q4_1:
      return {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
    case GgmlType::Q5_0:
      return {offsetof(BlockQ5_0, d)};
    case GgmlType::Q5_1:
      return {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
    case GgmlType::Q8_0:
      return {offsetof(BlockQ8_0, d)};
    case GgmlType::Q2_K:
      return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case GgmlType::Q3_K:
      return {offsetof(BlockQ3_K, d)};
    case GgmlType::Q4_K:
      return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case GgmlType::Q5_K:
      return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case GgmlType::Q6_K:
      return {offsetof(BlockQ6_K, d)};
    default:
      return {};
  }
}

uint16_t random_scale(Rng& rng) {
  std::uniform_real_distribution<float> log2_mag(-8.0f, -5.0f);
  const float mag = std::exp2(log2_mag(rng));
  return fp32_to_fp16(std::bernoulli_distribution(0.5)(rng) ? mag : -mag);
}

template <typename F>
void for_each_row(HostTensor& t, F f) {
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) f(t.row(i1, i2, i3));
    }
  }
}

}  // namespace

uint64_t case_seed(std::string_view case_name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : case_name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

void fill_normal(HostTensor& t, Rng& rng, double sigma, double mean) {
  std::normal_distribution<float> normal(static_cast<float>(mean), static_cast<float>(sigma));
  std::vector<float> x(static_cast<size_t>(t.ne[0]));
  for_each_row(t, [&](uint8_t* row) {
    for (float& v : x) v = normal(rng);
    quantize_row(t.type, x.data(), row, t.ne[0]);
  });
}

void fill_random_blocks(HostTensor& t, Rng& rng) {
  const TypeTraits& tt = traits(t.type);
  const int64_t blocks = t.ne[0] / tt.block_size;
  const std::vector<size_t> fields = f16_fields(t.type);
  std::uniform_int_distribution<int> byte(0, 255);
  for_each_row(t, [&](uint8_t* row) {
    for (size_t i = 0; i < blocks * tt.type_size; ++i) row[i] = static_cast<uint8_t>(byte(rng));
    for (int64_t b = 0; b < blocks; ++b) {
      for (size_t off : fields) {
        const uint16_t h = random_scale(rng);
        std::memcpy(row + b * tt.type_size + off, &h, 2);
      }
    }
  });
}

void fill_weights(HostTensor& t, Rng& rng) {
  if (traits(t.type).block_size == 1) {
    fill_normal(t, rng);
  } else {
    fill_random_blocks(t, rng);
  }
}

}  // namespace polyinfer::conformance
