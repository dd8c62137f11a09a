// ROPE (normal and NeoX, YaRN, frequency factors): a block per token and
// group of heads, the token's cos/sin table computed once per block; the
// rotation itself is rope.cuh's.
#include <algorithm>
#include <cmath>

#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/rope.cuh"

namespace polyinfer::cuda {
namespace {

// Threads per block: a token's rows of its group of heads.
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

// Heads [h0, h1) of x's token t into y: pairs through the table, the values
// past n_rot copied.
__device__ void rope_heads(const View& x, const View& y, const RopeArgs& p, const float2* table,
                           int64_t t, int64_t h0, int64_t h1) {
  if (h1 <= h0) return;
  const int half = p.n_rot / 2;
  const int64_t pairs = static_cast<int64_t>(half) * (h1 - h0);
  for (int64_t j = threadIdx.x; j < pairs; j += blockDim.x) {
    const int64_t h = h0 + j / half;
    const int i = static_cast<int>(j % half);
    const float* in = reinterpret_cast<const float*>(row_at(x, h, t, 0));
    float* out = reinterpret_cast<float*>(row_at(y, h, t, 0));
    const float2 cs = table[i];
    const int2 ab = rope_pair(p, i);
    const float x0 = in[ab.x], x1 = in[ab.y];
    out[ab.x] = x0 * cs.x - x1 * cs.y;
    out[ab.y] = x0 * cs.y + x1 * cs.x;
  }
  const int64_t rest = x.ne[0] - p.n_rot, tail = rest * (h1 - h0);
  for (int64_t j = threadIdx.x; j < tail; j += blockDim.x) {
    const int64_t h = h0 + j / rest, i = p.n_rot + j % rest;
    reinterpret_cast<float*>(row_at(y, h, t, 0))[i] =
        reinterpret_cast<const float*>(row_at(x, h, t, 0))[i];
  }
}

// Block (token, group): `per` heads of x0 then x1 (the pair unit's K; without
// rows when absent) counted as one list, with the same positions.
__global__ __launch_bounds__(kThreads) void rope_kernel(View x0, View y0, View x1, View y1,
                                                        View pos, View ff, RopeArgs p,
                                                        int64_t per) {
  extern __shared__ float2 table[];
  pdl_start();
  const int64_t t = blockIdx.x, h0 = static_cast<int64_t>(blockIdx.y) * per, h1 = h0 + per;
  rope_table(pos, ff, p, t, table);
  __syncthreads();
  const int64_t n0 = x0.ne[1];
  rope_heads(x0, y0, p, table, t, h0, h1 < n0 ? h1 : n0);
  rope_heads(x1, y1, p, table, t, h0 > n0 ? h0 - n0 : 0, h1 - n0 < x1.ne[1] ? h1 - n0 : x1.ne[1]);
}

// One block per token over all its heads for a prompt (26.9 -> 10.4 us for
// llama-8b's 512 tokens, kThreads above); a few tokens (decode with the
// ROPEs unfused) split their heads over blocks of 4, so that one block does
// not rotate a token's 40 heads alone.
void launch_rope_rows(const View& x0, const View& y0, const View& x1, const View& y1,
                      const View& pos, const View& ff, const RopeArgs& p, cudaStream_t stream) {
  constexpr int64_t kFewTokens = 32, kHeadsFew = 4;
  const size_t table = static_cast<size_t>(p.n_rot / 2) * sizeof(float2);
  const int64_t heads = x0.ne[1] + x1.ne[1], tokens = x0.ne[2];
  const int64_t per = tokens < kFewTokens ? kHeadsFew : heads;
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>((heads + per - 1) / per));
  launch_pdl(rope_kernel, grid, kThreads, table, stream, x0, y0, x1, y1, pos, ff, p, per);
}

bool supports_rope(const pi_node& n) {
  const pi_tensor &x = n.src[0], &pos = n.src[1], &ff = n.src[2];
  const int mode = n.i[0], n_rot = n.i[1];
  if (!is_f32_rows(x) || !is_f32_rows(n.dst) || !same_shape(x, n.dst) || x.ne[3] != 1) return false;
  if (pos.type != 26 || pos.nb[0] != 4 || pos.offset % 4 != 0 || pos.ne[0] != x.ne[2]) return false;
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > x.ne[0] || (mode != 0 && mode != 2)) return false;
  if (n_rot > kMaxRot || x.ne[2] > INT32_MAX || x.ne[1] > 65535)  // the table; grid x, y
    return false;
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
