// Activations as 8-bit blocks of 32 for the dp4a matrix-vector products
// (matvec.cu), written by the quantize kernel or by a fused kernel that
// produced the activations (ops_fused_norm.cu, SWIGLU).
#pragma once

#include "backends/cuda/cuda_common.cuh"

namespace polyinfer::cuda {

// Where the 8-bit activations live in scratch: codes [ncols][K], residual
// codes [ncols][K] (lo == nullptr: not wanted), the block scales d and
// d · Σ codes [ncols][K/32] (matvec.hpp's act_quant_at()).
struct ActQuantPtrs {
  int8_t* aq;
  int8_t* lo;
  float* ad;
  float* as;
};

// Steps of the residual code per step of the code: x ≈ d · (q + lo / kLoSteps).
constexpr float kLoSteps = 254.0f;

// The code of x in a block of scale d = amax/127: round to nearest, within
// ±127; 0 for an all-zero block. Every maker of the 8-bit blocks rounds so.
__device__ __forceinline__ float act_code(float x, float d) {
  return d > 0.0f ? fminf(127.0f, fmaxf(-127.0f, rintf(x / d))) : 0.0f;
}

// One 32-value block, a value per lane of the whole warp: d = amax/127
// (float32), q = round(x/d) clamped to ±127 (docs/OPS.md allows the 8-bit
// activations), and d · Σ q for the min terms of Q4_K. The residual
// x − d·q (at most d/2) as a second code lo = round((x/d − q) · kLoSteps)
// gives Q8_0 products 16-bit activations (error at most amax / 64,516) at
// the cost of a second __dp4a. `blk` is the block's index in [ncols][K/32],
// the same for every lane.
__device__ __forceinline__ void quantize_block32(float x, int64_t blk, const ActQuantPtrs& p) {
  const int lane = threadIdx.x % 32;
  const float amax = warp_max(fabsf(x));
  const float d = amax / 127.0f;
  const float q = act_code(x, d);
  p.aq[32 * blk + lane] = static_cast<int8_t>(q);
  if (p.lo != nullptr) {
    const float lo = d > 0.0f ? rintf(fmaf(-q, d, x) * (kLoSteps / d)) : 0.0f;
    p.lo[32 * blk + lane] = static_cast<int8_t>(fminf(127.0f, fmaxf(-127.0f, lo)));
  }
  const float sum = warp_sum(q);
  if (lane == 0) {
    p.ad[blk] = d;
    p.as[blk] = d * sum;
  }
}

}  // namespace polyinfer::cuda
