// Seeded pseudo-random weights with realistic scales. Every element is a pure
// function of (seed, tensor name, element index), so a tensor does not depend on the
// others nor on how it is split into chunks or threads.
#pragma once

#include <cstdint>
#include <string_view>

namespace polyinfer {

enum class WeightKind {
  kMatrix,  // N(0, 1/sqrt(ne0)): ne0 is the fan-in (embeddings: 1/sqrt(n_embd))
  kNorm,    // 1 + N(0, 0.02)
  kBias,    // N(0, 0.02)
};

inline constexpr float kNormJitter = 0.02f;
inline constexpr float kBiasStd = 0.02f;

// The random stream key of one tensor.
uint64_t tensor_stream_key(uint64_t seed, std::string_view tensor_name);

// Fills out[0 .. n_rows*ne0) (F32, row-major: ne0 contiguous) with rows
// [row_begin, row_begin + n_rows) of the tensor. Does not throw; out must hold
// n_rows * ne0 floats.
void fill_weight_rows(WeightKind kind, uint64_t key, int64_t ne0, int64_t row_begin, int64_t n_rows,
                      float* out);

}  // namespace polyinfer
