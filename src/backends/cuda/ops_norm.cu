// RMS_NORM and NORM: a few rows (decode) spread over many blocks each
// (norm_split.hpp); otherwise one block per row, the row read from global
// memory once per pass (a second and third pass hit L1/L2: rows are a few KB).
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/norm_split.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

// A few rows that the split kernel does not take get a block of 1,024
// threads each, so a 4,096-value row is 4 loads per thread, not 16; many rows
// (prefill) fill the GPU anyway.
constexpr int kThreads = 256, kThreadsFewRows = 1024, kFewRows = 64;

__global__ void norm_kernel(View x, View y, float eps, bool rms) {
  pdl_start();
  __shared__ float tmp[32];
  const int64_t rows = x.ne[1] * x.ne[2] * x.ne[3];
  const int64_t k = x.ne[0];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* in = reinterpret_cast<const float*>(row_flat(x, r));
    float* out = reinterpret_cast<float*>(row_flat(y, r));
    float mean = 0.0f;
    if (!rms) {
      float s = 0.0f;
      for (int64_t i = threadIdx.x; i < k; i += blockDim.x) s += in[i];
      mean = block_sum(s, tmp) / static_cast<float>(k);
    }
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) {
      const float v = in[i] - mean;
      ss += v * v;
    }
    const float scale = 1.0f / sqrtf(block_sum(ss, tmp) / static_cast<float>(k) + eps);
    for (int64_t i = threadIdx.x; i < k; i += blockDim.x) out[i] = (in[i] - mean) * scale;
  }
}

bool supports_norm(const pi_node& n) {
  return is_f32_rows(n.src[0]) && is_f32_rows(n.dst) && same_shape(n.src[0], n.dst);
}

const char* launch_norm(const LaunchContext& c, bool rms) {
  const int64_t rows = nrows(c.node.src[0]);
  NormArgs p{};
  p.a = c.src[0];
  p.norm = c.dst;
  p.eps = c.node.f[0];
  p.center = !rms;
  if (norm_split_fits(p, rows)) {
    launch_norm_split(p, rows, c.stream);
    return nullptr;
  }
  const int threads = rows < kFewRows ? kThreadsFewRows : kThreads;
  launch_pdl(norm_kernel, static_cast<unsigned>(rows < 65536 ? rows : 65536), threads, 0, c.stream,
             c.src[0], c.dst, c.node.f[0], rms);
  return nullptr;
}

}  // namespace

const OpImpl kOpRmsNorm{supports_norm, no_scratch,
                        [](const LaunchContext& c) { return launch_norm(c, true); }};
const OpImpl kOpNorm{supports_norm, no_scratch,
                     [](const LaunchContext& c) { return launch_norm(c, false); }};

}  // namespace polyinfer::cuda
