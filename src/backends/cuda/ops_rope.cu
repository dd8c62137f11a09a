// ROPE (normal and NeoX, YaRN, frequency factors): one block per (head,
// token) row. θ is computed in double from the position and the exponent
// (correctly rounded to float), so its error does not grow with the
// frequency index as the CPU's repeated products do; the YaRN ramp ends are
// computed on the host in float exactly as the CPU backend does.
#include <algorithm>
#include <cmath>

#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/fused_ops.hpp"

namespace polyinfer::cuda {
namespace {

struct RopeArgs {
  int mode, n_rot;
  float freq_scale, ext_factor, attn_factor, low, high;
  double log2_base;
};

// Head h of token t.
__device__ __forceinline__ void rope_row(const View& x, const View& pos, const View& ff,
                                         const View& y, const RopeArgs& p, int64_t h, int64_t t) {
  const float* in = reinterpret_cast<const float*>(row_at(x, h, t, 0));
  float* out = reinterpret_cast<float*>(row_at(y, h, t, 0));
  const int32_t position = reinterpret_cast<const int32_t*>(pos.data)[t];
  const int half = p.n_rot / 2;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const double base_theta = position * exp2(-2.0 * i / p.n_rot * p.log2_base);
    float extrap = static_cast<float>(base_theta);
    if (ff.data) extrap /= reinterpret_cast<const float*>(ff.data)[i];
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
    c *= mscale;
    s *= mscale;
    const int a = p.mode == 2 ? i : 2 * i;
    const int b = p.mode == 2 ? i + half : 2 * i + 1;
    const float x0 = in[a], x1 = in[b];
    out[a] = x0 * c - x1 * s;
    out[b] = x0 * s + x1 * c;
  }
  for (int64_t i = p.n_rot + threadIdx.x; i < x.ne[0]; i += blockDim.x) out[i] = in[i];
}

__global__ void rope_kernel(View x, View pos, View ff, View y, RopeArgs p) {
  rope_row(x, pos, ff, y, p, blockIdx.x, blockIdx.y);
}

// Two tensors (Q and K) with the same positions: grid x covers both's heads.
__global__ void rope_pair_kernel(View x0, View y0, View x1, View y1, View pos, View ff,
                                 RopeArgs p) {
  const int64_t h = blockIdx.x;
  if (h < x0.ne[1])
    rope_row(x0, pos, ff, y0, p, h, blockIdx.y);
  else
    rope_row(x1, pos, ff, y1, p, h - x0.ne[1], blockIdx.y);
}

bool supports_rope(const pi_node& n) {
  const pi_tensor &x = n.src[0], &pos = n.src[1], &ff = n.src[2];
  const int mode = n.i[0], n_rot = n.i[1];
  if (!is_f32_rows(x) || !is_f32_rows(n.dst) || !same_shape(x, n.dst) || x.ne[3] != 1) return false;
  if (pos.type != 26 || pos.nb[0] != 4 || pos.offset % 4 != 0 || pos.ne[0] != x.ne[2]) return false;
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > x.ne[0] || (mode != 0 && mode != 2)) return false;
  if (x.ne[1] > 65535 || x.ne[2] > 65535) return false;  // grid y limit
  return !present(ff) || (is_f32_rows(ff) && ff.ne[0] >= n_rot / 2);
}

// Where YaRN's ramp starts and ends, in float as the CPU backend computes it.
float corr_dim(int n_rot, int n_ctx_orig, float base, float rotations) {
  return n_rot * std::log(n_ctx_orig / (rotations * 2 * 3.14159265358979323846f)) /
         (2 * std::log(base));
}

RopeArgs rope_args(const pi_node& n) {
  RopeArgs p{n.i[0], n.i[1], n.f[1], n.f[2],
             n.f[3], 0.0f,   0.0f,   std::log2(static_cast<double>(n.f[0]))};
  if (p.ext_factor != 0.0f) {
    p.low = std::max(0.0f, std::floor(corr_dim(p.n_rot, n.i[2], n.f[0], n.f[4])));
    p.high = std::min(static_cast<float>(p.n_rot - 1),
                      std::ceil(corr_dim(p.n_rot, n.i[2], n.f[0], n.f[5])));
  }
  return p;
}

const char* launch_rope(const LaunchContext& c) {
  const RopeArgs p = rope_args(c.node);
  const pi_node& n = c.node;
  const dim3 grid(static_cast<unsigned>(n.src[0].ne[1]), static_cast<unsigned>(n.src[0].ne[2]));
  rope_kernel<<<grid, 64, 0, c.stream>>>(c.src[0], c.src[1], c.src[2], c.dst, p);
  return nullptr;
}

}  // namespace

const OpImpl kOpRope{supports_rope, no_scratch, launch_rope};

const char* launch_rope_pair(const UnitContext& c) {
  const NodeViews &a = c.views[0], &b = c.views[1];
  const dim3 grid(static_cast<unsigned>(a.src[0].ne[1] + b.src[0].ne[1]),
                  static_cast<unsigned>(a.src[0].ne[2]));
  rope_pair_kernel<<<grid, 64, 0, c.stream>>>(a.src[0], a.dst, b.src[0], b.dst, a.src[1], a.src[2],
                                              rope_args(c.nodes[0]));
  return nullptr;
}

}  // namespace polyinfer::cuda
