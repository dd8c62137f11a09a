#include "polyinfer/synthetic_weights.hpp"

#include <cmath>
#include <numbers>

namespace polyinfer {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// splitmix64's output function: a strong 64-bit mixer, so consecutive counters give
// independent-looking outputs (counter-based generation, no sequential state).
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Two standard normals from 48 random bits (Box-Muller). u1 lies strictly inside
// (0, 1), so the radius is never 0 and no weight is exactly zero.
void normal_pair(uint64_t bits, float& z0, float& z1) {
  constexpr float kScale = 1.0f / 16777216.0f;  // 2^-24
  const float u1 = (static_cast<float>(bits >> 40) + 0.5f) * kScale;
  const float u2 = static_cast<float>(bits & 0xFFFFFF) * kScale;
  const float r = std::sqrt(-2.0f * std::log(u1));
  const float a = 2.0f * std::numbers::pi_v<float> * u2;
  z0 = r * std::cos(a);
  z1 = r * std::sin(a);
}

void fill_normal_row(uint64_t row_key, int64_t n, float mean, float std, float* out) {
  for (int64_t j = 0; j < n; j += 2) {
    float z0, z1;
    normal_pair(mix(row_key + static_cast<uint64_t>(j / 2) * kGolden), z0, z1);
    out[j] = mean + std * z0;
    if (j + 1 < n) out[j + 1] = mean + std * z1;
  }
}

}  // namespace

uint64_t tensor_stream_key(uint64_t seed, std::string_view tensor_name) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the name
  for (unsigned char c : tensor_name) h = (h ^ c) * 0x100000001B3ull;
  return mix(mix(seed) ^ h);
}

void fill_weight_rows(WeightKind kind, uint64_t key, int64_t ne0, int64_t row_begin, int64_t n_rows,
                      float* out) {
  float mean = 0.0f;
  float std = kBiasStd;
  if (kind == WeightKind::kMatrix) std = 1.0f / std::sqrt(static_cast<float>(ne0));
  if (kind == WeightKind::kNorm) {
    mean = 1.0f;
    std = kNormJitter;
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint64_t row_key = mix(key + static_cast<uint64_t>(row_begin + r) * kGolden);
    fill_normal_row(row_key, ne0, mean, std, out + r * ne0);
  }
}

}  // namespace polyinfer
