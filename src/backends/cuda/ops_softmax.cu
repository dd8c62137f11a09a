// SOFT_MAX: one block per row; max, sum of exponentials, then the scaled
// write, each a pass over the row (the later passes hit L1/L2).
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

__global__ void softmax_kernel(View x, View mask, View y, float scale) {
  pdl_start();
  __shared__ float tmp[32];
  const int64_t rows = x.ne[1] * x.ne[2] * x.ne[3];
  const int64_t k = x.ne[0];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t i1 = r % x.ne[1];
    const float* in = reinterpret_cast<const float*>(row_flat(x, r));
    float* out = reinterpret_cast<float*>(row_flat(y, r));
    const float* m = mask.data ? reinterpret_cast<const float*>(row_at(mask, i1, 0, 0)) : nullptr;
    float mx = -INFINITY;
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) {
      mx = fmaxf(mx, scale * in[i] + (m ? m[i] : 0.0f));
    }
    mx = block_max(mx, tmp);
    if (mx == -INFINITY) {  // every position masked: 0s, as docs/OPS.md says
      for (int64_t i = threadIdx.x; i < k; i += blockDim.x) out[i] = 0.0f;
      continue;
    }
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) {
      s += expf(scale * in[i] + (m ? m[i] : 0.0f) - mx);
    }
    const float inv = 1.0f / block_sum(s, tmp);
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) {
      out[i] = expf(scale * in[i] + (m ? m[i] : 0.0f) - mx) * inv;
    }
  }
}

bool supports_softmax(const pi_node& n) {
  const pi_tensor &x = n.src[0], &m = n.src[1];
  if (!is_f32_rows(x) || !is_f32_rows(n.dst) || !same_shape(x, n.dst)) return false;
  return !present(m) || (is_f32_rows(m) && m.ne[0] == x.ne[0] && m.ne[1] >= x.ne[1]);
}

const char* launch_softmax(const LaunchContext& c) {
  const int64_t rows = nrows(c.node.src[0]);
  launch_pdl(softmax_kernel, static_cast<unsigned>(rows < 65536 ? rows : 65536), 256, 0, c.stream,
             c.src[0], c.src[1], c.dst, c.node.f[0]);
  return nullptr;
}

}  // namespace

const OpImpl kOpSoftMax{supports_softmax, no_scratch, launch_softmax};

}  // namespace polyinfer::cuda
