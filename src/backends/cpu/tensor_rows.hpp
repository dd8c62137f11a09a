// Row addressing for CPU kernels: a tensor is a set of rows (dim 0) indexed by
// (i1, i2, i3) through the byte strides nb, so views (permutes, slices of the
// KV cache) need no copies.
#pragma once
#include <cstdint>

#include "backends/cpu/op_context.hpp"

namespace polyinfer::cpu {

struct RowIndex {
  int64_t i1, i2, i3;
};

// Flat row number r (0 <= r < nrows(t)) to its (i1, i2, i3).
inline RowIndex unflatten(const pi_tensor& t, int64_t r) {
  const int64_t i1 = r % t.ne[1];
  const int64_t rest = r / t.ne[1];
  return {i1, rest % t.ne[2], rest / t.ne[2]};
}

inline uint8_t* row_ptr(const pi_tensor& t, int64_t i1, int64_t i2, int64_t i3) {
  return tensor_data(t) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}
inline uint8_t* row_ptr(const pi_tensor& t, RowIndex r) {
  return row_ptr(t, r.i1, r.i2, r.i3);
}

inline float* row_f32(const pi_tensor& t, RowIndex r) {
  return reinterpret_cast<float*>(row_ptr(t, r));
}

constexpr uint32_t kTypeF32 = 0, kTypeF16 = 1, kTypeQ8_0 = 8, kTypeI32 = 26, kTypeBF16 = 30;

// F32 with contiguous rows: what the element-wise kernels require.
inline bool is_f32_rows(const pi_tensor& t) {
  return t.type == kTypeF32 && t.nb[0] == 4;
}

inline bool same_shape(const pi_tensor& a, const pi_tensor& b) {
  return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

inline bool present(const pi_tensor& t) {
  return t.buffer != nullptr;
}

}  // namespace polyinfer::cpu
