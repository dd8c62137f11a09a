// The ADD, RMS_NORM and MUL after a quantized decode product, in its kernel
// (fusion.hpp's kMatvecNormQ; matvec.hpp's MatvecNormQ): the epilogue that
// makes the 8-bit blocks of the norm's output with the norm still pending on
// them, and what the products over those blocks do with it
// (act_quant_cache.hpp's PendingNorm): the factor their sums are scaled by,
// and the first product's writes of the norm's outputs. Used by matvec.cu's
// matvec_fast and matvec_held.cu.
#pragma once

#include "backends/cuda/act_quant.cuh"
#include "backends/cuda/act_quant_cache.hpp"
#include "backends/cuda/cuda_common.cuh"

namespace polyinfer::cuda {

// What a kMatvecNormQ product's kernel does after its rows (MatvecNormQ).
struct NormEpilogue {
  const float* res;  // nullptr: none
  float* sum;
  const float* nw;
  ActQuantPtrs q;    // the blocks of sum · nw
  float* ssq;        // Σ sum² per block of 32
  unsigned* counts;  // per block of 32 rows, zero before and after
};

// The warp that finishes the last of a block of 32 rows (rows n0 .. n0 +
// nrows − 1 were its own; lane 0 wrote their sums to d) does that block's
// ADD, its part of RMS_NORM's Σ sum² and the 8-bit blocks of sum · nw. Each
// warp's lane 0 adds its rows to the block's counter with acquire-release
// semantics (its sums before, the other warps' after: the CUDA programming
// guide's "last block" reduction); the last leaves the counter at zero.
__device__ __forceinline__ void norm_epilogue(const NormEpilogue& e, const float* d, int64_t n0,
                                              int nrows, int lane) {
  const int64_t blk = n0 / 32, i = 32 * blk + lane;
  unsigned before = 0;
  if (lane == 0) {
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
                 : "=r"(before)
                 : "l"(e.counts + blk), "r"(static_cast<unsigned>(nrows))
                 : "memory");
  }
  if (__shfl_sync(0xffffffffu, before, 0) + nrows != 32) return;
  __syncwarp();  // orders the other lanes' loads after lane 0's acquire
  const float x = __ldcg(d + i) + e.res[i];
  e.sum[i] = x;
  const float ss = warp_sum(x * x);
  quantize_block32(x * e.nw[i], blk, e.q);
  if (lane == 0) {
    e.ssq[blk] = ss;
    e.counts[blk] = 0;
  }
}

// RMS_NORM's factor r = 1 / sqrt(mean(x²) + eps) over k values (k % 128 ==
// 0: four blocks' sums per float4; one load per lane up to k = 4,096) from
// the k/32 per-block sums that a kMatvecNormQ product left (PendingNorm).
__device__ __forceinline__ float norm_factor(const PendingNorm& n, int64_t k, int lane) {
  float s = 0.0f;
  for (int64_t b = lane; b < k / 128; b += 32) {
    const float4 v = __ldcg(reinterpret_cast<const float4*>(n.ssq) + b);
    s += (v.x + v.y) + (v.z + v.w);
  }
  return rsqrtf(warp_sum(s) / static_cast<float>(k) + n.eps);
}

// The first product over a kMatvecNormQ unit's blocks writes RMS_NORM's and
// MUL's outputs: live warp w of `warps` takes values w·32 + lane, every
// 32·warps-th.
__device__ __forceinline__ void norm_outputs(const PendingNorm& n, int64_t k, float r, int64_t w,
                                             int64_t warps, int lane) {
  for (int64_t e = 32 * w + lane; e < k; e += 32 * warps) {
    const float v = n.sum[e] * r;
    n.norm[e] = v;
    n.out[e] = v * n.nw[e];
  }
}

}  // namespace polyinfer::cuda
