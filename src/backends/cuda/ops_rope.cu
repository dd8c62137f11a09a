// ROPE (normal and NeoX, YaRN, frequency factors): one block per (head,
// token) row; the rotation itself is rope.cuh's.
#include <algorithm>
#include <cmath>

#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/rope.cuh"

namespace polyinfer::cuda {
namespace {

// Head h of token t.
__device__ __forceinline__ void rope_row(const View& x, const View& pos, const View& ff,
                                         const View& y, const RopeArgs& p, int64_t h, int64_t t) {
  const float* in = reinterpret_cast<const float*>(row_at(x, h, t, 0));
  float* out = reinterpret_cast<float*>(row_at(y, h, t, 0));
  const int32_t position = reinterpret_cast<const int32_t*>(pos.data)[t];
  const float* factors = reinterpret_cast<const float*>(ff.data);
  for (int i = threadIdx.x; i < p.n_rot / 2; i += blockDim.x) {
    const float2 cs = rope_cos_sin(p, position, factors, i);
    const int2 ab = rope_pair(p, i);
    const float x0 = in[ab.x], x1 = in[ab.y];
    out[ab.x] = x0 * cs.x - x1 * cs.y;
    out[ab.y] = x0 * cs.y + x1 * cs.x;
  }
  for (int64_t i = p.n_rot + threadIdx.x; i < x.ne[0]; i += blockDim.x) out[i] = in[i];
}

__global__ void rope_kernel(View x, View pos, View ff, View y, RopeArgs p) {
  pdl_start();
  rope_row(x, pos, ff, y, p, blockIdx.x, blockIdx.y);
}

// Two tensors (Q and K) with the same positions: grid x covers both's heads.
__global__ void rope_pair_kernel(View x0, View y0, View x1, View y1, View pos, View ff,
                                 RopeArgs p) {
  pdl_start();
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

const char* launch_rope(const LaunchContext& c) {
  const RopeArgs p = rope_args(c.node);
  const pi_node& n = c.node;
  const dim3 grid(static_cast<unsigned>(n.src[0].ne[1]), static_cast<unsigned>(n.src[0].ne[2]));
  launch_pdl(rope_kernel, grid, 64, 0, c.stream, c.src[0], c.src[1], c.src[2], c.dst, p);
  return nullptr;
}

}  // namespace

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

const OpImpl kOpRope{supports_rope, no_scratch, launch_rope};

const char* launch_rope_pair(const UnitContext& c) {
  const NodeViews &a = c.views[0], &b = c.views[1];
  const dim3 grid(static_cast<unsigned>(a.src[0].ne[1] + b.src[0].ne[1]),
                  static_cast<unsigned>(a.src[0].ne[2]));
  launch_pdl(rope_pair_kernel, grid, 64, 0, c.stream, a.src[0], a.dst, b.src[0], b.dst, a.src[1],
             a.src[2], rope_args(c.nodes[0]));
  return nullptr;
}

}  // namespace polyinfer::cuda
