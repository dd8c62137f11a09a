// The dispatching entry points of the matmul kernel translation units: each
// forwards to the best Highway target for this CPU (HWY_DYNAMIC_DISPATCH).
// matmul_kernels.cpp assembles them into the per-type MatmulKernels table.
#pragma once
#include <cstddef>
#include <cstdint>

namespace polyinfer::cpu {

using GemmFn = void(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
                    size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride);

// act_convert.cpp: F32 rows to act_rows.hpp rows with 32- or 256-element blocks.
void convert_act_q8(const float* x, void* y, int64_t k);
void convert_act_q8k(const float* x, void* y, int64_t k);

// gemm_float.cpp: activations stay F32 (converted rows are plain copies) for
// F32 and BF16 weights; for F16 weights they are F16 rows (convert_act_f16).
void convert_act_f16(const float* x, void* y, int64_t k);
GemmFn gemm_f32, gemm_f16, gemm_bf16;
// gemm_legacy.cpp: activations in 32-element-block rows.
GemmFn gemm_q4_0, gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_q8_0;
// gemm_q8_0_f32.cpp: Q8_0 weights against plain F32 activation rows.
GemmFn gemm_q8_0_f32;
// gemm_kquant.cpp: activations in 256-element-block rows.
GemmFn gemm_q2_k, gemm_q3_k, gemm_q4_k, gemm_q5_k, gemm_q6_k;

// Name of the Highway target HWY_DYNAMIC_DISPATCH picks on this CPU.
const char* dispatched_target_name();

}  // namespace polyinfer::cpu
