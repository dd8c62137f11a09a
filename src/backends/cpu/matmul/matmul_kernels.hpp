// Matrix-multiply kernels of the CPU backend, per weight type. Weights stay in
// their stored GGUF block format; activations (F32) are first converted to
// the form the dot product wants (int8 rows with per-block scales for
// quantized weights, as ggml does, so integer dot products can be used; see
// act_rows.hpp), then a tiled GEMM runs over (weight rows) x (activation
// columns). SIMD through Highway with run-time dispatch.
#pragma once
#include <cstddef>
#include <cstdint>

#include "polyinfer/dtype.hpp"

namespace polyinfer::cpu {

struct MatmulKernels {
  // Bytes of one converted activation row of k elements (k a multiple of the
  // weight block length). A multiple of 64, so converted rows stay aligned.
  size_t (*act_row_size)(int64_t k);
  // Convert one F32 row of k elements into act_row_size(k) bytes at y.
  void (*convert_act)(const float* x, void* y, int64_t k);
  // For r < n_rows, c < n_cols:
  //   dst[c * dst_stride + r] = sum_k W[r][k] * A[c][k]
  // W rows start every w_stride bytes, converted activation rows every
  // a_stride bytes, dst_stride counts floats. Any n_rows, n_cols >= 1: up to
  // 3 columns take the matrix-vector path (weights streamed once), more the
  // register-blocked one, which repacks the weights and interleaves the
  // columns per call (so one call should cover many rows and columns; per-
  // thread scratch of about (k + k / 4) * n_cols bytes is kept between calls).
  void (*gemm)(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride);
};

// Kernels for a weight type and a number of activation columns per product
// (n_cols <= 3: decode), nullptr when the type has none. Q8_0 decodes with F32
// activations (exact products) and prefills with int8 blocks (gemm_q8_0_f32.cpp).
const MatmulKernels* matmul_kernels(GgmlType weight_type, int64_t n_cols);

// The Highway target chosen at run time for this CPU, e.g. "AVX3_DL", "AVX2", "NEON".
const char* simd_target_name();

}  // namespace polyinfer::cpu
