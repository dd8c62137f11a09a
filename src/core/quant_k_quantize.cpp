// Reference quantizers for Q4_K, Q5_K and Q6_K, following ggml-quants.c's
// quantize_row_q{4,5,6}_K_ref: per-sub-block scale search, then the sub-block
// scales themselves quantized against one f16 super-block scale, then codes
// recomputed against the stored (rounded) scales so the error of the scale
// rounding is partly absorbed. No heap allocation: all scratch is per block on
// the stack.
#include <algorithm>
#include <cmath>

#include "core/quant_block_io.hpp"
#include "core/quant_k_scales.hpp"
#include "core/quant_k_search.hpp"
#include "core/quant_kernels.hpp"
#include "polyinfer/fp16.hpp"
#include "polyinfer/quant_blocks.hpp"

namespace polyinfer::quant {
namespace {

constexpr int kSubBlocks = kQK_K / 32;  // Q4_K/Q5_K sub-blocks of 32
constexpr int kQ6Groups = kQK_K / 16;   // Q6_K sub-blocks of 16
constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS

// The common front half of Q4_K and Q5_K: codes 0..nmax per element, plus the
// header (d, dmin, packed 6-bit scales and mins) of the super-block.
struct ScaleMinBlock {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t L[kQK_K];
};

// Packs 6-bit scale ls and min lm of sub-block j into scales[12] (the inverse
// of get_scale_min_k4). scales must start zeroed: the high bits are OR-ed in.
void pack_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* scales) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = static_cast<uint8_t>((ls & 0x0F) | ((lm & 0x0F) << 4));
    scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
    scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
  }
}

// Quantizes a sub-block scale (or min) to 6 bits against the largest one.
uint8_t six_bit_level(float inverse, float value) {
  return std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inverse * value)));
}

// ggml's weights for the Q4_K/Q5_K search: the sub-block RMS plus |x|, so
// large elements count more without small ones being ignored.
void search_weights(const float* x, float* w) {
  float sum_x2 = 0;
  for (int l = 0; l < 32; ++l) sum_x2 += x[l] * x[l];
  const float av_x = std::sqrt(sum_x2 / 32);
  for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(x[l]);
}

ScaleMinBlock quantize_scale_min_block(const float* x, const AsymmetricSearch& search) {
  ScaleMinBlock out{};
  float scales[kSubBlocks];
  float mins[kSubBlocks];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    float w[32];
    search_weights(x + 32 * j, w);
    const ScaleAndMin sm = search_scale_min(x + 32 * j, w, 32, search, out.L + 32 * j);
    scales[j] = sm.scale;
    mins[j] = sm.min;
    max_scale = std::max(max_scale, sm.scale);
    max_min = std::max(max_min, sm.min);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kSubBlocks; ++j) {
    pack_scale_min_k4(j, six_bit_level(inv_scale, scales[j]), six_bit_level(inv_min, mins[j]),
                      out.scales);
  }
  out.d = fp32_to_fp16(max_scale / 63.f);
  out.dmin = fp32_to_fp16(max_min / 63.f);

  // Re-derive the codes from the scales as stored; a zero scale keeps the
  // search's codes (they dequantize to -dmin * m either way).
  for (int j = 0; j < kSubBlocks; ++j) {
    const ScaleMin sm = get_scale_min_k4(j, out.scales);
    const float d = fp16_to_fp32(out.d) * sm.scale;
    if (d == 0) continue;
    const float dm = fp16_to_fp32(out.dmin) * sm.min;
    for (int l = 32 * j; l < 32 * j + 32; ++l) {
      const int q = nearest_int((x[l] + dm) / d);
      out.L[l] = static_cast<uint8_t>(std::clamp(q, 0, search.nmax));
    }
  }
  return out;
}

// Q6_K: 16 signed 8-bit sub-block scales against one f16 d; codes -32..31.
BlockQ6_K quantize_q6_k_block(const float* x) {
  BlockQ6_K b{};
  int8_t L[kQK_K];
  float scales[kQ6Groups];
  float max_scale = 0;
  float max_abs_scale = 0;
  for (int g = 0; g < kQ6Groups; ++g) {
    scales[g] = search_symmetric_scale(x + 16 * g, 16, 32, L + 16 * g);
    if (std::fabs(scales[g]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[g]);
      max_scale = scales[g];
    }
  }
  if (max_abs_scale < kGroupMaxEps) return b;  // all zeros: every field 0

  // The largest |scale| maps to -128, the full int8 range.
  const float iscale = -128.f / max_scale;
  b.d = fp32_to_fp16(1 / iscale);
  for (int g = 0; g < kQ6Groups; ++g) {
    b.scales[g] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[g])));
  }
  for (int g = 0; g < kQ6Groups; ++g) {
    const float d = fp16_to_fp32(b.d) * b.scales[g];
    if (d == 0) continue;
    for (int l = 16 * g; l < 16 * g + 16; ++l) {
      L[l] = static_cast<int8_t>(std::clamp(nearest_int(x[l] / d), -32, 31) + 32);
    }
  }
  // Layout as read by dequantize_q6_k: per 128 elements, ql holds the low
  // nibbles of elements l, l+32 (low) and l+64, l+96 (high); qh their top 2 bits.
  for (int h = 0; h < kQK_K / 128; ++h) {
    const int8_t* q = L + 128 * h;
    uint8_t* ql = b.ql + 64 * h;
    uint8_t* qh = b.qh + 32 * h;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((q[l] & 0x0F) | ((q[l + 64] & 0x0F) << 4));
      ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0x0F) | ((q[l + 96] & 0x0F) << 4));
      qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                   ((q[l + 96] >> 4) << 6));
    }
  }
  return b;
}

// Low nibbles of a Q4_K/Q5_K: per 64 elements, element l in the low nibble
// of byte l and element l+32 in its high nibble.
void pack_k_nibbles(const uint8_t* L, uint8_t* qs) {
  for (int c = 0; c < kQK_K / 64; ++c) {
    for (int l = 0; l < 32; ++l) {
      qs[32 * c + l] =
          static_cast<uint8_t>((L[64 * c + l] & 0x0F) | ((L[64 * c + l + 32] & 0x0F) << 4));
    }
  }
}

}  // namespace

void quantize_q4_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const ScaleMinBlock s = quantize_scale_min_block(src + i * kQK_K, {15, -1.f, 0.1f, 20});
    BlockQ4_K b;
    b.d = s.d;
    b.dmin = s.dmin;
    std::copy(s.scales, s.scales + kKScaleSize, b.scales);
    pack_k_nibbles(s.L, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const ScaleMinBlock s = quantize_scale_min_block(src + i * kQK_K, {31, -0.5f, 0.1f, 15});
    BlockQ5_K b{};
    b.d = s.d;
    b.dmin = s.dmin;
    std::copy(s.scales, s.scales + kKScaleSize, b.scales);
    pack_k_nibbles(s.L, b.qs);
    // The fifth bit of element e goes to bit e / 32 of qh[e % 32].
    for (int e = 0; e < kQK_K; ++e) {
      b.qh[e % 32] |= static_cast<uint8_t>(((s.L[e] >> 4) & 1) << (e / 32));
    }
    store_block(dst, i, b);
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) store_block(dst, i, quantize_q6_k_block(src + i * kQK_K));
}

}  // namespace polyinfer::quant
