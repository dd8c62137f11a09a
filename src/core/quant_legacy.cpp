// Plain types (F32, F16, BF16) and the 32-element block quants (Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0). Both directions reproduce gguf-py's quants.py float32
// operation order, so dequantized floats and quantized bytes are identical to
// gguf.quants.dequantize / gguf.quants.quantize (which mirror ggml's
// dequantize_row_* and quantize_row_*_ref).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant_block_io.hpp"
#include "core/quant_kernels.hpp"
#include "polyinfer/fp16.hpp"
#include "polyinfer/quant_blocks.hpp"

namespace polyinfer::quant {
namespace {

// The x[j] of largest |x| in x[0..n), the first one on ties, sign kept:
// numpy's abs(x).argmax(), which the Q4_0/Q5_0 scale keeps the sign of.
float signed_absmax(const float* x, int n) {
  float max = x[0];
  float amax = std::fabs(x[0]);
  for (int j = 1; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// Reciprocal scale as quants.py writes it: np.where(d == 0, 0, 1 / d).
float inverse_or_zero(float d) {
  return d == 0.0f ? 0.0f : 1.0f / d;
}

// Symmetric 4/5-bit code: trunc(x*id + offset + 0.5) clipped to the top code,
// i.e. ggml's MIN(top, (int8_t)(x*id + offset + 0.5f)). The sum is >= 0 by
// construction of id, so truncation toward zero is the intended floor.
uint8_t symmetric_code(float x, float id, float offset_half, int top) {
  const float v = x * id + offset_half;
  return static_cast<uint8_t>(std::min(top, static_cast<int>(v)));
}

// Asymmetric 4/5-bit code: trunc((x - min)*id + 0.5), clipped to the top code.
uint8_t offset_code(float x, float min, float id, int top) {
  const float v = (x - min) * id + 0.5f;
  return static_cast<uint8_t>(std::min(top, static_cast<int>(v)));
}

// The 4-bit nibbles of element j (low half: j < 16, high half: j >= 16).
uint8_t low_nibble_code(const uint8_t* qs, int j) {
  return j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
}

// Packs 32 codes: element j in the low nibble of byte j, element j+16 in the high one.
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | (q[j + 16] << 4));
}

// Bit j of the little-endian qh word is the fifth bit of element j.
void pack_high_bits(const uint8_t* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < 32; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1u) << j;
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

uint8_t five_bit_code(const uint8_t* qs, const uint8_t* qh, int j) {
  const uint8_t high = (qh[j / 8] >> (j % 8)) & 1u;
  return static_cast<uint8_t>(low_nibble_code(qs, j) | (high << 4));
}

}  // namespace

void dequantize_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    dst[i] = fp16_to_fp32(h);
  }
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, bytes + 2 * i, 2);
    dst[i] = bf16_to_fp32(b);
  }
}

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK4_0;
    for (int j = 0; j < kQK4_0; ++j) y[j] = d * static_cast<float>(low_nibble_code(b.qs, j) - 8);
  }
}

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK4_1; ++i) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    float* y = dst + i * kQK4_1;
    for (int j = 0; j < kQK4_1; ++j) y[j] = d * static_cast<float>(low_nibble_code(b.qs, j)) + m;
  }
}

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK5_0; ++i) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK5_0;
    for (int j = 0; j < kQK5_0; ++j) {
      y[j] = d * static_cast<float>(five_bit_code(b.qs, b.qh, j) - 16);
    }
  }
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK5_1; ++i) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    float* y = dst + i * kQK5_1;
    for (int j = 0; j < kQK5_1; ++j) {
      y[j] = d * static_cast<float>(five_bit_code(b.qs, b.qh, j)) + m;
    }
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK8_0;
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

void quantize_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void quantize_f16(const float* src, void* dst, int64_t n) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = fp32_to_fp16(src[i]);
    std::memcpy(bytes + 2 * i, &h, 2);
  }
}

void quantize_bf16(const float* src, void* dst, int64_t n) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = fp32_to_bf16(src[i]);
    std::memcpy(bytes + 2 * i, &b, 2);
  }
}

void quantize_q4_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK4_0; ++i) {
    const float* x = src + i * kQK4_0;
    // The largest magnitude maps to code 0 (-8), using the full negative range.
    const float d = signed_absmax(x, kQK4_0) / -8;
    const float id = inverse_or_zero(d);
    uint8_t q[kQK4_0];
    for (int j = 0; j < kQK4_0; ++j) q[j] = symmetric_code(x[j], id, 8.5f, 15);
    BlockQ4_0 b;
    b.d = fp32_to_fp16(d);
    pack_nibbles(q, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK4_1; ++i) {
    const float* x = src + i * kQK4_1;
    const auto [min_it, max_it] = std::minmax_element(x, x + kQK4_1);
    const float min = *min_it;
    const float d = (*max_it - min) / 15;
    const float id = inverse_or_zero(d);
    uint8_t q[kQK4_1];
    for (int j = 0; j < kQK4_1; ++j) q[j] = offset_code(x[j], min, id, 15);
    BlockQ4_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    pack_nibbles(q, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK5_0; ++i) {
    const float* x = src + i * kQK5_0;
    const float d = signed_absmax(x, kQK5_0) / -16;
    const float id = inverse_or_zero(d);
    uint8_t q[kQK5_0];
    for (int j = 0; j < kQK5_0; ++j) q[j] = symmetric_code(x[j], id, 16.5f, 31);
    BlockQ5_0 b;
    b.d = fp32_to_fp16(d);
    pack_high_bits(q, b.qh);
    pack_nibbles(q, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK5_1; ++i) {
    const float* x = src + i * kQK5_1;
    const auto [min_it, max_it] = std::minmax_element(x, x + kQK5_1);
    const float min = *min_it;
    const float d = (*max_it - min) / 31;
    const float id = inverse_or_zero(d);
    uint8_t q[kQK5_1];
    for (int j = 0; j < kQK5_1; ++j) q[j] = offset_code(x[j], min, id, 31);
    BlockQ5_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    pack_high_bits(q, b.qh);
    pack_nibbles(q, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK8_0; ++i) {
    const float* x = src + i * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = inverse_or_zero(d);
    BlockQ8_0 b;
    b.d = fp32_to_fp16(d);
    // std::round is roundf: halves away from zero, as ggml and quants.py's np_roundf.
    for (int j = 0; j < kQK8_0; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    store_block(dst, i, b);
  }
}

}  // namespace polyinfer::quant
