// Activations as 8-bit blocks of 32 for the dp4a matrix-vector products
// (matvec.cu), written by the quantize kernel or by a fused kernel that
// produced the activations (ops_fused_norm.cu, SWIGLU).
#pragma once

#include "backends/cuda/cuda_common.cuh"

namespace polyinfer::cuda {

// Where the 8-bit activations live in scratch: codes [ncols][K], the block
// scales d and d · Σ codes [ncols][K/32] (matvec.hpp's act_quant_at()).
struct ActQuantPtrs {
  int8_t* aq;
  float* ad;
  float* as;
};

// One 32-value block, a value per lane of the whole warp: d = amax/127
// (float32), q = round(x/d) clamped to ±127 (docs/OPS.md allows the 8-bit
// activations), and d · Σ q for the min terms of Q4_K. `blk` is the block's
// index in [ncols][K/32], the same for every lane.
__device__ __forceinline__ void quantize_block32(float x, int64_t blk, const ActQuantPtrs& p) {
  const int lane = threadIdx.x % 32;
  const float amax = warp_max(fabsf(x));
  const float d = amax / 127.0f;
  const float q = d > 0.0f ? fminf(127.0f, fmaxf(-127.0f, rintf(x / d))) : 0.0f;
  p.aq[32 * blk + lane] = static_cast<int8_t>(q);
  const float sum = warp_sum(q);
  if (lane == 0) {
    p.ad[blk] = d;
    p.as[blk] = d * sum;
  }
}

}  // namespace polyinfer::cuda
