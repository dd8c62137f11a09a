// Dequantization of the K-quants (256-element super-blocks). Each formula is
// evaluated in float32 in the order gguf-py's quants.py uses, so the result is
// bit-identical to gguf.quants.dequantize (and to ggml's dequantize_row_*).
#include "core/quant_block_io.hpp"
#include "core/quant_k_scales.hpp"
#include "core/quant_kernels.hpp"
#include "polyinfer/fp16.hpp"
#include "polyinfer/quant_blocks.hpp"

namespace polyinfer::quant {
namespace {

// Q2_K/Q3_K store 2-bit codes four to a byte: element e lives in byte
// (e / 128) * 32 + e % 32 at bit offset 2 * ((e % 128) / 32).
uint8_t two_bit_code(const uint8_t* qs, int e) {
  return (qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3u;
}

// Q3_K's 6-bit scale i (0..15), stored minus 32: low 4 bits in the nibbles of
// bytes 0-7, high 2 bits in bytes 8-11.
int q3_k_scale(const uint8_t* scales, int i) {
  const int low = i < 8 ? (scales[i] & 0x0F) : (scales[i - 8] >> 4);
  const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Q4_K/Q5_K store 4-bit codes in 64-element chunks: element e is in byte
// (e / 64) * 32 + e % 32, low nibble for the first 32 of the chunk.
uint8_t k_nibble(const uint8_t* qs, int e) {
  return (qs[(e / 64) * 32 + e % 32] >> (4 * ((e / 32) % 2))) & 0x0F;
}

// Q6_K: low 4 bits in ql, element e in byte (e / 128) * 64 + e % 64 (nibble
// (e % 128) / 64); high 2 bits in qh like Q2_K's codes.
int q6_k_code(const BlockQ6_K& b, int e) {
  const int low = (b.ql[(e / 128) * 64 + e % 64] >> (4 * ((e % 128) / 64))) & 0x0F;
  return (low | (two_bit_code(b.qh, e) << 4)) - 32;
}

// Shared by Q4_K and Q5_K: x = (d * sc) * q - (dmin * m) per 32-element sub-block.
template <typename Block, typename CodeFn>
void dequantize_scale_min_k(const void* src, float* dst, int64_t n, CodeFn code) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<Block>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int j = 0; j < kQK_K / 32; ++j) {
      const ScaleMin sm = get_scale_min_k4(j, b.scales);
      const float dl = d * static_cast<float>(sm.scale);
      const float ml = dmin * static_cast<float>(sm.min);
      for (int e = 32 * j; e < 32 * j + 32; ++e) y[e] = dl * static_cast<float>(code(b, e)) - ml;
    }
  }
}

}  // namespace

void dequantize_q2_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int g = 0; g < kQK_K / 16; ++g) {
      const float dl = d * static_cast<float>(b.scales[g] & 0x0F);
      const float ml = dmin * static_cast<float>(b.scales[g] >> 4);
      for (int e = 16 * g; e < 16 * g + 16; ++e) {
        y[e] = dl * static_cast<float>(two_bit_code(b.qs, e)) - ml;
      }
    }
  }
}

void dequantize_q3_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK_K;
    for (int g = 0; g < kQK_K / 16; ++g) {
      const float dl = d * static_cast<float>(q3_k_scale(b.scales, g));
      for (int e = 16 * g; e < 16 * g + 16; ++e) {
        // A clear hmask bit (bit e / 32 of byte e % 32) subtracts 4.
        const bool high = (b.hmask[e % 32] >> (e / 32)) & 1u;
        const int q = two_bit_code(b.qs, e) - (high ? 0 : 4);
        y[e] = dl * static_cast<float>(q);
      }
    }
  }
}

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  dequantize_scale_min_k<BlockQ4_K>(src, dst, n,
                                    [](const BlockQ4_K& b, int e) { return k_nibble(b.qs, e); });
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  // The fifth bit of element e is bit e / 32 of qh[e % 32].
  dequantize_scale_min_k<BlockQ5_K>(src, dst, n, [](const BlockQ5_K& b, int e) {
    return k_nibble(b.qs, e) | (((b.qh[e % 32] >> (e / 32)) & 1) << 4);
  });
}

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK_K;
    for (int g = 0; g < kQK_K / 16; ++g) {
      const float dl = d * static_cast<float>(b.scales[g]);
      for (int e = 16 * g; e < 16 * g + 16; ++e) y[e] = dl * static_cast<float>(q6_k_code(b, e));
    }
  }
}

}  // namespace polyinfer::quant
