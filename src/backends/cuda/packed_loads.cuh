// Loads of packed weight bytes from shared memory where a block's fields sit
// at 2-byte aligned addresses (Q6_K's 210-byte blocks), and the 8-bit dot
// product the quantized matrix-vector kernels use (matvec.cu, matvec_held.cu).
#pragma once

#include <cstdint>

namespace polyinfer::cuda {

// Four bytes at a 2-byte aligned shared-memory address.
__device__ __forceinline__ uint32_t lds32(const uint8_t* p) {
  const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
  return q[0] | (static_cast<uint32_t>(q[1]) << 16);
}

// Sixteen bytes at a 2-byte aligned shared-memory address: the aligned words
// around them, realigned by byte permutes (cheaper than eight 16-bit loads).
__device__ __forceinline__ void lds128(const uint8_t* p, uint32_t q[4]) {
  // Pointer arithmetic, not an integer round trip, keeps the address in the
  // shared space (LDS, not generic loads).
  const int off = static_cast<int>(reinterpret_cast<uintptr_t>(p) & 3);
  const uint32_t* w = reinterpret_cast<const uint32_t*>(p - off);
  const bool odd = off != 0;
  uint32_t x[5];
#pragma unroll
  for (int i = 0; i < 4; ++i) x[i] = w[i];
  x[4] = odd ? w[4] : 0u;
  const uint32_t sel = odd ? 0x5432u : 0x3210u;
#pragma unroll
  for (int i = 0; i < 4; ++i) q[i] = __byte_perm(x[i], x[i + 1], sel);
}

__device__ __forceinline__ int dp4a(uint32_t a, int b, int c) {
  return __dp4a(static_cast<int>(a), b, c);
}

}  // namespace polyinfer::cuda
