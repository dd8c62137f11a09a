// The per-weight-type kernel table: which activation form each type uses and
// which dispatching GEMM entry computes it.
#include "backends/cpu/matmul/matmul_kernels.hpp"

#include <cstring>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/kernel_entries.hpp"

namespace polyinfer::cpu {
namespace {

size_t f32_row_size(int64_t k) {
  return (4 * static_cast<size_t>(k) + 63) / 64 * 64;
}

void copy_f32_row(const float* x, void* y, int64_t k) {
  const size_t used = 4 * static_cast<size_t>(k);
  std::memcpy(y, x, used);
  std::memset(static_cast<uint8_t*>(y) + used, 0, f32_row_size(k) - used);
}

size_t f16_row_size(int64_t k) {
  return (2 * static_cast<size_t>(k) + 63) / 64 * 64;
}

void f16_row(const float* x, void* y, int64_t k) {
  convert_act_f16(x, y, k);
  const size_t used = 2 * static_cast<size_t>(k);
  std::memset(static_cast<uint8_t*>(y) + used, 0, f16_row_size(k) - used);
}

size_t q8_row_size(int64_t k) {
  return act_layout(k, kActBlockLegacy).bytes;
}
size_t q8k_row_size(int64_t k) {
  return act_layout(k, kActBlockK).bytes;
}

constexpr MatmulKernels float_kernels(GemmFn* gemm) {
  return {f32_row_size, copy_f32_row, gemm};
}
constexpr MatmulKernels legacy_kernels(GemmFn* gemm) {
  return {q8_row_size, convert_act_q8, gemm};
}
constexpr MatmulKernels kquant_kernels(GemmFn* gemm) {
  return {q8k_row_size, convert_act_q8k, gemm};
}

constexpr MatmulKernels kF32 = float_kernels(gemm_f32);
constexpr MatmulKernels kF16 = {f16_row_size, f16_row, gemm_f16};
constexpr MatmulKernels kBF16 = float_kernels(gemm_bf16);
constexpr MatmulKernels kQ4_0 = legacy_kernels(gemm_q4_0);
constexpr MatmulKernels kQ4_1 = legacy_kernels(gemm_q4_1);
constexpr MatmulKernels kQ5_0 = legacy_kernels(gemm_q5_0);
constexpr MatmulKernels kQ5_1 = legacy_kernels(gemm_q5_1);
// Decode with F32 activations: see gemm_q8_0_f32.cpp; prefill with int8 blocks.
constexpr MatmulKernels kQ8_0Decode = float_kernels(gemm_q8_0_f32);
constexpr MatmulKernels kQ8_0 = legacy_kernels(gemm_q8_0);
constexpr int64_t kMaxDecodeCols = 3;
constexpr MatmulKernels kQ2_K = kquant_kernels(gemm_q2_k);
constexpr MatmulKernels kQ3_K = kquant_kernels(gemm_q3_k);
constexpr MatmulKernels kQ4_K = kquant_kernels(gemm_q4_k);
constexpr MatmulKernels kQ5_K = kquant_kernels(gemm_q5_k);
constexpr MatmulKernels kQ6_K = kquant_kernels(gemm_q6_k);

}  // namespace

const MatmulKernels* matmul_kernels(GgmlType weight_type, int64_t n_cols) {
  if (weight_type == GgmlType::Q8_0 && n_cols <= kMaxDecodeCols) return &kQ8_0Decode;
  switch (weight_type) {
    case GgmlType::F32:
      return &kF32;
    case GgmlType::F16:
      return &kF16;
    case GgmlType::BF16:
      return &kBF16;
    case GgmlType::Q4_0:
      return &kQ4_0;
    case GgmlType::Q4_1:
      return &kQ4_1;
    case GgmlType::Q5_0:
      return &kQ5_0;
    case GgmlType::Q5_1:
      return &kQ5_1;
    case GgmlType::Q8_0:
      return &kQ8_0;
    case GgmlType::Q2_K:
      return &kQ2_K;
    case GgmlType::Q3_K:
      return &kQ3_K;
    case GgmlType::Q4_K:
      return &kQ4_K;
    case GgmlType::Q5_K:
      return &kQ5_K;
    case GgmlType::Q6_K:
      return &kQ6_K;
    default:
      return nullptr;
  }
}

const char* simd_target_name() {
  return dispatched_target_name();
}

}  // namespace polyinfer::cpu
