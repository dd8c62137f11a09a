// Activation rows in the integer form the quantized GEMM kernels read: the
// roles of ggml's block_q8_0 / block_q8_1 / block_q8_K, stored as separate
// arrays (structure of arrays) so a kernel can broadcast 4 codes, or a scale,
// straight from memory.
//
// A row of k F32 activations x (k a multiple of the block length B) becomes
//   int8   qs[k]        codes: round(x / d), in [-127, 127]
//   float  d[k/B]       per-block scale: max|x| / 127 (0 for an all-zero block)
//   int32  isum16[k/16] sum of qs over each 16 elements
//   float  fsum16[k/16] the same sums as floats (exact: |sum| <= 16 * 127)
//   int32  isum32[k/32] sums over 32 elements
//   float  fsum32[k/32]
// then zero padding to a multiple of 64 bytes. x[e] ~= d[e / B] * qs[e].
//
// B = 32 for the 32-element weight types (Q4_0 ... Q8_0: like Q8_0 / Q8_1
// blocks, whose d*sum is d[b] * fsum32[b]) and B = 256 for the K-quants (like
// Q8_K, whose bsums are isum16). The sums let a kernel apply a weight type's
// code offset or min once per group instead of once per element.
#pragma once
#include <cstddef>
#include <cstdint>

namespace polyinfer::cpu {

inline constexpr int kActBlockLegacy = 32;
inline constexpr int kActBlockK = 256;

// Byte offsets of the parts of one activation row.
struct ActLayout {
  int block;  // B
  size_t d, isum16, fsum16, isum32, fsum32, bytes;
};

inline ActLayout act_layout(int64_t k, int block) {
  ActLayout l{};
  const size_t n = static_cast<size_t>(k);
  l.block = block;
  l.d = n;
  l.isum16 = l.d + 4 * (n / static_cast<size_t>(block));
  l.fsum16 = l.isum16 + 4 * (n / 16);
  l.isum32 = l.fsum16 + 4 * (n / 16);
  l.fsum32 = l.isum32 + 4 * (n / 32);
  l.bytes = (l.fsum32 + 4 * (n / 32) + 63) / 64 * 64;
  return l;
}

// Read-only view of a converted row.
struct ActRow {
  const int8_t* qs;
  const float* d;
  const int32_t* isum16;
  const float* fsum16;
  const int32_t* isum32;
  const float* fsum32;
};

inline ActRow act_row(const void* row, const ActLayout& l) {
  const auto* p = static_cast<const uint8_t*>(row);
  return {reinterpret_cast<const int8_t*>(p),
          reinterpret_cast<const float*>(p + l.d),
          reinterpret_cast<const int32_t*>(p + l.isum16),
          reinterpret_cast<const float*>(p + l.fsum16),
          reinterpret_cast<const int32_t*>(p + l.isum32),
          reinterpret_cast<const float*>(p + l.fsum32)};
}

}  // namespace polyinfer::cpu
