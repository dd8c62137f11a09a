// ARGMAX: one block per row; each thread keeps its first maximum, then a
// shared-memory reduction that prefers the lower index on ties.
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void argmax_kernel(View x, View out) {
  pdl_start();
  __shared__ float best_v[kThreads];
  __shared__ int64_t best_i[kThreads];
  for (int64_t r = blockIdx.x; r < x.ne[1]; r += gridDim.x) {
    const float* in = reinterpret_cast<const float*>(row_at(x, r, 0, 0));
    float bv = -INFINITY;
    int64_t bi = -1;
    for (int64_t i = threadIdx.x; i < x.ne[0]; i += blockDim.x) {
      if (bi < 0 || in[i] > bv) {
        bv = in[i];
        bi = i;
      }
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (static_cast<int>(threadIdx.x) < s) {
        const float ov = best_v[threadIdx.x + s];
        const int64_t oi = best_i[threadIdx.x + s];
        const int64_t mi = best_i[threadIdx.x];
        if (oi >= 0 &&
            (mi < 0 || ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < mi))) {
          best_v[threadIdx.x] = ov;
          best_i[threadIdx.x] = oi;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) reinterpret_cast<int32_t*>(out.data)[r] = static_cast<int32_t>(best_i[0]);
    __syncthreads();
  }
}

bool supports_argmax(const pi_node& n) {
  return is_f32_rows(n.src[0]) && n.src[0].ne[2] == 1 && n.src[0].ne[3] == 1 &&
         n.dst.type == kI32 && n.dst.ne[0] == n.src[0].ne[1] && n.dst.nb[0] == 4 &&
         n.dst.offset % 4 == 0;
}

const char* launch_argmax(const LaunchContext& c) {
  const int64_t rows = c.node.src[0].ne[1];
  launch_pdl(argmax_kernel, static_cast<unsigned>(rows < 65536 ? rows : 65536), kThreads, 0,
             c.stream, c.src[0], c.dst);
  return nullptr;
}

}  // namespace

const OpImpl kOpArgmax{supports_argmax, no_scratch, launch_argmax};

}  // namespace polyinfer::cuda
