// Device-side building blocks shared by the CUDA kernels: the tensor view a
// kernel receives, half/bfloat16 conversions and warp reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/view.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
                   kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kI32 = 26,
                   kBF16 = 30;

// Row (i1, i2, i3) of a view.
__device__ __forceinline__ uint8_t* row_at(const View& v, int64_t i1, int64_t i2, int64_t i3) {
  return v.data + i1 * v.nb[1] + i2 * v.nb[2] + i3 * v.nb[3];
}

// Flat row r (over ne[1] * ne[2] * ne[3]) of a view.
__device__ __forceinline__ uint8_t* row_flat(const View& v, int64_t r) {
  const int64_t i1 = r % v.ne[1];
  const int64_t rest = r / v.ne[1];
  return row_at(v, i1, rest % v.ne[2], rest / v.ne[2]);
}

__device__ __forceinline__ float f16_bits_to_f32(uint16_t h) {
  return __half2float(__ushort_as_half(h));
}

__device__ __forceinline__ float bf16_bits_to_f32(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

// Eight F16 values held in 16 bytes of registers, as float32.
__device__ __forceinline__ void f16x8_regs_to_f32(const uint4& v, float out[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

// Eight F16 values at a 16-byte aligned address, as float32 (one 16-byte load).
__device__ __forceinline__ void f16x8_to_f32(const uint8_t* p, float out[8]) {
  f16x8_regs_to_f32(*reinterpret_cast<const uint4*>(p), out);
}

// Round to nearest even as ggml's fp32_to_bf16, keeping a NaN a quiet NaN.
__device__ __forceinline__ uint16_t f32_to_bf16_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64);
  return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

// Four values as F16 or BF16 (round to nearest even) into 8 bytes at `out`
// (8-byte aligned): the prompt GEMM's 16-bit activations.
__device__ __forceinline__ void store_half4(uint16_t* out, float4 v, bool bf16) {
  uint2 o;
  if (bf16) {
    o.x = f32_to_bf16_bits(v.x) | (static_cast<uint32_t>(f32_to_bf16_bits(v.y)) << 16);
    o.y = f32_to_bf16_bits(v.z) | (static_cast<uint32_t>(f32_to_bf16_bits(v.w)) << 16);
  } else {
    const __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
    o.x = *reinterpret_cast<const uint32_t*>(&lo);
    o.y = *reinterpret_cast<const uint32_t*>(&hi);
  }
  *reinterpret_cast<uint2*>(out) = o;
}

// Element i of an F32, F16 or BF16 row set to v (rounded to nearest even).
__device__ __forceinline__ void store_float_as(uint32_t type, uint8_t* row, int64_t i, float v) {
  if (type == kF32) {
    reinterpret_cast<float*>(row)[i] = v;
  } else if (type == kF16) {
    reinterpret_cast<uint16_t*>(row)[i] = __half_as_ushort(__float2half_rn(v));
  } else {
    reinterpret_cast<uint16_t*>(row)[i] = f32_to_bf16_bits(v);
  }
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

// Sum over a block of blockDim.x threads (a multiple of 32, at most 1024);
// every thread gets the result. `tmp` holds 32 floats of shared memory.
__device__ __forceinline__ float block_sum(float x, float* tmp) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  x = warp_sum(x);
  __syncthreads();
  if (lane == 0) tmp[warp] = x;
  __syncthreads();
  x = lane < static_cast<int>(blockDim.x / 32) ? tmp[lane] : 0.0f;
  return warp_sum(x);
}

__device__ __forceinline__ float block_max(float x, float* tmp) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) tmp[warp] = x;
  __syncthreads();
  x = lane < static_cast<int>(blockDim.x / 32) ? tmp[lane] : -INFINITY;
  return warp_max(x);
}

}  // namespace polyinfer::cuda
