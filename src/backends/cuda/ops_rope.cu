// ROPE (normal and NeoX, YaRN, frequency factors): one block per token, its
// rows of every head; the rotation itself is rope.cuh's.
#include <algorithm>
#include <cmath>

#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/rope.cuh"

namespace polyinfer::cuda {
namespace {

// Threads per block: one token's rows of every head.
constexpr int kThreads = 256;
// Longest rotation: its cos/sin table (8 bytes a pair) stays within 32 KiB of shared memory.
constexpr int kMaxRot = 8192;

// cos/sin of token t's n_rot/2 frequencies into `table`: they depend on the
// position only, so each is computed once per token, not once per head (a
// block per (head, token) spent a prompt's ROPE on the double-precision
// exponent and sincosf: 28 us for llama-8b's Q and K of 512 tokens, H100).
__device__ void rope_table(const View& pos, const View& ff, const RopeArgs& p, int64_t t,
                           float2* table) {
  const int32_t position = reinterpret_cast<const int32_t*>(pos.data)[t];
  const float* factors = reinterpret_cast<const float*>(ff.data);
  for (int i = threadIdx.x; i < p.n_rot / 2; i += blockDim.x)
    table[i] = rope_cos_sin(p, position, factors, i);
}

// Every head of x's token t into y: pairs through the table, the values past
// n_rot copied.
__device__ void rope_token(const View& x, const View& y, const RopeArgs& p, const float2* table,
                           int64_t t) {
  const int half = p.n_rot / 2;
  const int64_t pairs = static_cast<int64_t>(half) * x.ne[1];
  for (int64_t j = threadIdx.x; j < pairs; j += blockDim.x) {
    const int64_t h = j / half;
    const int i = static_cast<int>(j % half);
    const float* in = reinterpret_cast<const float*>(row_at(x, h, t, 0));
    float* out = reinterpret_cast<float*>(row_at(y, h, t, 0));
    const float2 cs = table[i];
    const int2 ab = rope_pair(p, i);
    const float x0 = in[ab.x], x1 = in[ab.y];
    out[ab.x] = x0 * cs.x - x1 * cs.y;
    out[ab.y] = x0 * cs.y + x1 * cs.x;
  }
  const int64_t rest = x.ne[0] - p.n_rot, tail = rest * x.ne[1];
  for (int64_t j = threadIdx.x; j < tail; j += blockDim.x) {
    const int64_t h = j / rest, i = p.n_rot + j % rest;
    reinterpret_cast<float*>(row_at(y, h, t, 0))[i] =
        reinterpret_cast<const float*>(row_at(x, h, t, 0))[i];
  }
}

// One block per token: x0 into y0 and, when x1 has rows (the pair unit's K),
// x1 into y1, with the same positions.
__global__ __launch_bounds__(kThreads) void rope_kernel(View x0, View y0, View x1, View y1,
                                                        View pos, View ff, RopeArgs p) {
  extern __shared__ float2 table[];
  pdl_start();
  const int64_t t = blockIdx.x;
  rope_table(pos, ff, p, t, table);
  __syncthreads();
  rope_token(x0, y0, p, table, t);
  if (x1.ne[1] > 0) rope_token(x1, y1, p, table, t);
}

void launch_rope_rows(const View& x0, const View& y0, const View& x1, const View& y1,
                      const View& pos, const View& ff, const RopeArgs& p, cudaStream_t stream) {
  const size_t table = static_cast<size_t>(p.n_rot / 2) * sizeof(float2);
  launch_pdl(rope_kernel, static_cast<unsigned>(x0.ne[2]), kThreads, table, stream, x0, y0, x1, y1,
             pos, ff, p);
}

bool supports_rope(const pi_node& n) {
  const pi_tensor &x = n.src[0], &pos = n.src[1], &ff = n.src[2];
  const int mode = n.i[0], n_rot = n.i[1];
  if (!is_f32_rows(x) || !is_f32_rows(n.dst) || !same_shape(x, n.dst) || x.ne[3] != 1) return false;
  if (pos.type != 26 || pos.nb[0] != 4 || pos.offset % 4 != 0 || pos.ne[0] != x.ne[2]) return false;
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > x.ne[0] || (mode != 0 && mode != 2)) return false;
  if (n_rot > kMaxRot || x.ne[2] > INT32_MAX) return false;  // the table; grid x
  return !present(ff) || (is_f32_rows(ff) && ff.ne[0] >= n_rot / 2);
}

// Where YaRN's ramp starts and ends, in float as the CPU backend computes it.
float corr_dim(int n_rot, int n_ctx_orig, float base, float rotations) {
  return n_rot * std::log(n_ctx_orig / (rotations * 2 * 3.14159265358979323846f)) /
         (2 * std::log(base));
}

const char* launch_rope(const LaunchContext& c) {
  launch_rope_rows(c.src[0], c.dst, View{}, View{}, c.src[1], c.src[2], rope_args(c.node),
                   c.stream);
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
  launch_rope_rows(a.src[0], a.dst, b.src[0], b.dst, a.src[1], a.src[2], rope_args(c.nodes[0]),
                   c.stream);
  return nullptr;
}

}  // namespace polyinfer::cuda
