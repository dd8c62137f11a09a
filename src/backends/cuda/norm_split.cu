// The split row normalization of norm_split.hpp: grid (slices of 256 values,
// rows), 256 threads. Each block sums the squares of the whole row (float4
// loads, all issued before the first use, so the pass costs one L2 round
// trip), then normalizes its slice, one value per thread. Every block of a
// row reduces the same values in the same order, so all agree on the scale.
#include "backends/cuda/norm_split.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

constexpr int kThreads = 256;  // a block, and the values of its slice
constexpr int kVec = 8;        // float4 loads per thread per source
constexpr int64_t kMaxRow = int64_t{kVec} * 4 * kThreads;
constexpr int64_t kMaxRows = 8;  // decode: as many as matvec columns

// Values i .. i + 3 of a row of k (those past k read as 0); `vec`: rows are
// 16-byte aligned and k % 4 == 0.
__device__ __forceinline__ float4 load4(const float* row, int64_t i, int64_t k, bool vec) {
  if (vec) return *reinterpret_cast<const float4*>(row + i);
  return make_float4(row[i], i + 1 < k ? row[i + 1] : 0.0f, i + 2 < k ? row[i + 2] : 0.0f,
                     i + 3 < k ? row[i + 3] : 0.0f);
}

// Σ (v - mean)² over the components of v at indices i .. i + 3 below k.
__device__ __forceinline__ float sq_dev(float4 v, float mean, int64_t i, int64_t k) {
  const float d[4] = {v.x - mean, v.y - mean, v.z - mean, v.w - mean};
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < 4; ++c) s += i + c < k ? d[c] * d[c] : 0.0f;
  return s;
}

// The weight row, which no kernel writes in a model, is read before the PDL
// wait: in place (llama decode, H200) a norm otherwise waited a DRAM round
// trip for it behind the next product's weight copies.
__global__ __launch_bounds__(kThreads) void norm_split_kernel(NormArgs p, bool vec) {
  __shared__ float tmp[32];
  const int64_t r = blockIdx.y, k = p.a.ne[0];
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const bool mine = i < k;
  const bool weighted = mine && p.out.data;
  float xi = 0.0f, wi = 0.0f;
  if (weighted && p.w_early) wi = reinterpret_cast<const float*>(p.w.data)[i];
  pdl_start();
  const float* x = reinterpret_cast<const float*>(row_flat(p.a, r));
  const float* y = p.b.data ? reinterpret_cast<const float*>(row_flat(p.b, r)) : nullptr;
  // This block's value, loaded first so that its latency overlaps the row's.
  if (mine) {
    xi = y ? x[i] + y[i] : x[i];
    if (weighted && !p.w_early) wi = reinterpret_cast<const float*>(p.w.data)[i];
  }
  float4 v[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const int64_t e = 4 * (static_cast<int64_t>(threadIdx.x) + j * kThreads);
    v[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (e < k) {
      v[j] = load4(x, e, k, vec);
      if (y) {
        const float4 u = load4(y, e, k, vec);
        v[j] = make_float4(v[j].x + u.x, v[j].y + u.y, v[j].z + u.z, v[j].w + u.w);
      }
    }
  }
  float mean = 0.0f;
  if (p.center) {
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kVec; ++j) s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
    mean = block_sum(s, tmp) / static_cast<float>(k);
  }
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    ss += sq_dev(v[j], mean, 4 * (static_cast<int64_t>(threadIdx.x) + j * kThreads), k);
  }
  const float scale = 1.0f / sqrtf(block_sum(ss, tmp) / static_cast<float>(k) + p.eps);
  float ov = 0.0f;
  if (mine) {
    if (p.b.data) reinterpret_cast<float*>(row_flat(p.sum, r))[i] = xi;
    const float nv = (xi - mean) * scale;
    reinterpret_cast<float*>(row_flat(p.norm, r))[i] = nv;
    if (p.out.data) {
      ov = nv * wi;
      reinterpret_cast<float*>(row_flat(p.out, r))[i] = ov;
    }
  }
  // k % 32 == 0 with q.aq set, so a warp's 32 values are all in the row or
  // all past it: the condition is uniform across the warp.
  if (p.q.aq && mine) quantize_block32(ov, (r * k + i) / 32, p.q);
}

// Two views of the same elements at the same addresses.
bool same_elements(const View& a, const View& b) {
  if (a.data != b.data) return false;
  for (int d = 0; d < 4; ++d) {
    if (a.ne[d] != b.ne[d] || a.nb[d] != b.nb[d]) return false;
  }
  return true;
}

}  // namespace

bool norm_split_fits(const NormArgs& p, int64_t rows) {
  if (rows > kMaxRows || p.a.ne[0] > kMaxRow) return false;
  const View* outs[] = {&p.sum, &p.norm, &p.out};
  for (int o = 0; o < 3; ++o) {
    for (const View* in : {&p.a, &p.b, &p.w}) {
      if (views_overlap(*outs[o], *in)) return false;
    }
    // Outputs over each other's very elements are fine (a graph may put
    // MUL's dst over RMS_NORM's): one thread writes an element's sum, norm
    // and out in node order, so the last node's value stays. Outputs over
    // inputs do not happen in the executor's graphs (graph/memory_plan.hpp
    // keeps a unit's inputs until the unit has run).
    const View& next = *outs[(o + 1) % 3];
    if (views_overlap(*outs[o], next) && !same_elements(*outs[o], next)) return false;
  }
  return true;
}

void launch_norm_split(const NormArgs& p, int64_t rows, cudaStream_t stream) {
  const int64_t k = p.a.ne[0];
  const bool vec = k % 4 == 0 && absent_or_aligned16(p.a) && absent_or_aligned16(p.b);
  const dim3 grid(static_cast<unsigned>((k + kThreads - 1) / kThreads),
                  static_cast<unsigned>(rows));
  launch_pdl(norm_split_kernel, grid, kThreads, 0, stream, p, vec);
}

}  // namespace polyinfer::cuda
