// The prompt's row normalization (norm_rows.hpp).
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/norm_rows.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

// 256 threads a row: llama-8b's 512 rows of 4,096 took 13.0 us, against 13.6
// with 512, 16.4 with 1,024 and 18.2 with 128 (H200, Nsight Compute).
constexpr int kThreads = 256, kMaxPieces = 8;

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

__device__ __forceinline__ float4 mul4(float4 a, float s) {
  return make_float4(a.x * s, a.y * s, a.z * s, a.w * s);
}

__device__ __forceinline__ float4 mul4(float4 a, float4 b) {
  return make_float4(a.x * b.x, a.y * b.y, a.z * b.z, a.w * b.w);
}

template <typename T>
__device__ __forceinline__ T* piece_row(const View& v, int64_t r) {
  return reinterpret_cast<T*>(row_flat(v, r));
}

// V pieces of four values per thread: rows of up to 4 * V * blockDim.x values.
template <int V>
__global__ __launch_bounds__(kThreads) void norm_rows_kernel(NormArgs p) {
  pdl_start();
  __shared__ float tmp[32];
  const int64_t r = blockIdx.x, k4 = p.a.ne[0] / 4;
  const bool add = p.b.data != nullptr, mul = p.out.data != nullptr;
  const float4* x = piece_row<const float4>(p.a, r);
  const float4* y = add ? piece_row<const float4>(p.b, r) : nullptr;
  const float4* w = reinterpret_cast<const float4*>(p.w.data);
  float4 v[V], wv[V];
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
    if (i < k4) {
      v[j] = add ? add4(x[i], y[i]) : x[i];
      if (mul) wv[j] = w[i];
    }
  }
  float4* s = add ? piece_row<float4>(p.sum, r) : nullptr;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
    if (i < k4) {
      if (add) s[i] = v[j];
      ss += v[j].x * v[j].x + v[j].y * v[j].y + v[j].z * v[j].z + v[j].w * v[j].w;
    }
  }
  const float scale = 1.0f / sqrtf(block_sum(ss, tmp) / static_cast<float>(4 * k4) + p.eps);
  float4* n = piece_row<float4>(p.norm, r);
  float4* o = mul ? piece_row<float4>(p.out, r) : nullptr;
  uint16_t* h = p.half ? p.half + r * 4 * k4 : nullptr;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
    if (i < k4) {
      const float4 nv = mul4(v[j], scale);
      n[i] = nv;
      if (mul) {
        const float4 ov = mul4(nv, wv[j]);
        o[i] = ov;
        if (h) store_half4(h + 4 * i, ov, p.half_bf16);
      }
    }
  }
}

}  // namespace

bool norm_rows_fits(const NormArgs& p, int64_t k) {
  return !p.center && p.q.aq == nullptr && k % 4 == 0 && k <= 4 * kMaxPieces * kThreads &&
         absent_or_aligned16(p.a) && absent_or_aligned16(p.b) && absent_or_aligned16(p.sum) &&
         absent_or_aligned16(p.norm) && absent_or_aligned16(p.out) &&
         (p.out.data == nullptr || absent_or_aligned16(p.w));
}

void launch_norm_rows(const NormArgs& p, int64_t rows, cudaStream_t stream) {
  const int64_t per = (p.a.ne[0] / 4 + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(rows);
  if (per <= 1) {
    launch_pdl(norm_rows_kernel<1>, grid, kThreads, 0, stream, p);
  } else if (per <= 2) {
    launch_pdl(norm_rows_kernel<2>, grid, kThreads, 0, stream, p);
  } else if (per <= 4) {
    launch_pdl(norm_rows_kernel<4>, grid, kThreads, 0, stream, p);
  } else {
    launch_pdl(norm_rows_kernel<8>, grid, kThreads, 0, stream, p);
  }
}

}  // namespace polyinfer::cuda
