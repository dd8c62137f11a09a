// What ROPE's kernels share (ops_rope.cu, fused_rope_kv.cu): the parameters
// and the rotation of one frequency index, so that the fused unit rotates
// with the very bits of the ROPE op.
#pragma once

#include "backends/cuda/cuda_common.cuh"

namespace polyinfer::cuda {

struct RopeArgs {
  int mode, n_rot;
  float freq_scale, ext_factor, attn_factor, low, high;
  double log2_base;
};

// A ROPE node's parameters; the YaRN ramp ends in float exactly as the CPU
// backend computes them (ops_rope.cu).
RopeArgs rope_args(const pi_node& n);

// cos θ and sin θ, both times the YaRN magnitude scale, for frequency index i
// (< n_rot / 2) at `position`; `ff` the frequency factors or nullptr. θ is
// computed in double from the position and the exponent (correctly rounded to
// float), so its error does not grow with i as the CPU's repeated products do.
__device__ __forceinline__ float2 rope_cos_sin(const RopeArgs& p, int32_t position, const float* ff,
                                               int i) {
  const double base_theta = position * exp2(-2.0 * i / p.n_rot * p.log2_base);
  float extrap = static_cast<float>(base_theta);
  if (ff) extrap /= ff[i];
  float theta = p.freq_scale * extrap;
  float mscale = p.attn_factor;
  if (p.ext_factor != 0.0f) {
    const float ramp = (static_cast<float>(i) - p.low) / fmaxf(0.001f, p.high - p.low);
    const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, ramp))) * p.ext_factor;
    theta = theta * (1.0f - mix) + extrap * mix;
    mscale *= 1.0f + 0.1f * logf(1.0f / p.freq_scale);
  }
  float s, c;
  sincosf(theta, &s, &c);
  return make_float2(c * mscale, s * mscale);
}

// The element pair that frequency index i rotates: (2i, 2i + 1), or
// (i, i + n_rot/2) in NeoX mode (2).
__device__ __forceinline__ int2 rope_pair(const RopeArgs& p, int i) {
  return p.mode == 2 ? make_int2(i, i + p.n_rot / 2) : make_int2(2 * i, 2 * i + 1);
}

}  // namespace polyinfer::cuda
