// Reference (scalar, exact) conversion between F32 and the stored GGUF types.
// These are the ground truth every backend kernel is tested against.
//
// Dequantize matches gguf-py's gguf.quants.dequantize bit for bit (same float32
// operation order). Quantize follows ggml-quants.c's reference quantize_row_*_ref
// algorithms: for Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/BF16/F16 the bytes equal
// gguf.quants.quantize; for Q4_K/Q5_K/Q6_K (no gguf-py quantizer) the error
// bounds are stated in docs/QUANT_FORMATS.md and checked by the tests.
#pragma once

#include <cstdint>

#include "polyinfer/dtype.hpp"

namespace polyinfer {

// Dequantizes n elements stored at src (row_size(type, n) bytes) into dst[0..n).
// Throws Error(kInvalidArgument) if n is not a multiple of the block size,
// Error(kUnsupported) if the type has no reference dequantize (traits().dequantizable).
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// Quantizes src[0..n) into dst (row_size(type, n) bytes).
// Throws like dequantize_row, with traits().quantizable deciding support.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace polyinfer
