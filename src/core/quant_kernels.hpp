// Per-type reference kernels behind quantize_row/dequantize_row (quant.hpp).
// Each takes a validated element count n (a multiple of the type's block size);
// quant_dispatch.cpp does the checking and picks the kernel.
#pragma once

#include <cstdint>

namespace polyinfer::quant {

void dequantize_f32(const void* src, float* dst, int64_t n);
void dequantize_f16(const void* src, float* dst, int64_t n);
void dequantize_bf16(const void* src, float* dst, int64_t n);
void dequantize_q4_0(const void* src, float* dst, int64_t n);
void dequantize_q4_1(const void* src, float* dst, int64_t n);
void dequantize_q5_0(const void* src, float* dst, int64_t n);
void dequantize_q5_1(const void* src, float* dst, int64_t n);
void dequantize_q8_0(const void* src, float* dst, int64_t n);
void dequantize_q2_k(const void* src, float* dst, int64_t n);
void dequantize_q3_k(const void* src, float* dst, int64_t n);
void dequantize_q4_k(const void* src, float* dst, int64_t n);
void dequantize_q5_k(const void* src, float* dst, int64_t n);
void dequantize_q6_k(const void* src, float* dst, int64_t n);

void quantize_f32(const float* src, void* dst, int64_t n);
void quantize_f16(const float* src, void* dst, int64_t n);
void quantize_bf16(const float* src, void* dst, int64_t n);
void quantize_q4_0(const float* src, void* dst, int64_t n);
void quantize_q4_1(const float* src, void* dst, int64_t n);
void quantize_q5_0(const float* src, void* dst, int64_t n);
void quantize_q5_1(const float* src, void* dst, int64_t n);
void quantize_q8_0(const float* src, void* dst, int64_t n);
void quantize_q4_k(const float* src, void* dst, int64_t n);
void quantize_q5_k(const float* src, void* dst, int64_t n);
void quantize_q6_k(const float* src, void* dst, int64_t n);

}  // namespace polyinfer::quant
