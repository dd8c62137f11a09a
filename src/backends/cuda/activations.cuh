// Activation functions shared by the element-wise kernels and the fused
// SWIGLU (fused_norm_act.cu).
#pragma once

#include <cuda_runtime.h>

namespace polyinfer::cuda {

__device__ __forceinline__ float silu(float x) {
  // For x < 0, x·e^x / (1 + e^x): e^-x would overflow to inf below x = -88.7
  // and give 0 where the result is still a normal float (x = -90: -7.4e-38).
  if (x >= 0.0f) return x / (1.0f + expf(-x));
  const float e = expf(x);
  return x * e / (1.0f + e);
}

__device__ __forceinline__ float gelu(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

}  // namespace polyinfer::cuda
