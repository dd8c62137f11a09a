// IEEE 754 binary16 (F16) and bfloat16 (BF16) conversions, bit-exact.
// F16: round to nearest, ties to even, with subnormals, inf and NaN (as NumPy's astype).
// BF16: ggml's rule (ggml-impl.h ggml_compute_fp32_to_bf16): NaN becomes a quiet
// NaN, everything else rounds to nearest even on the upper 16 bits.
#pragma once

#include <cstdint>

namespace polyinfer {

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t b);
uint16_t fp32_to_bf16(float f);

}  // namespace polyinfer
