#include "backends/cuda/flash_decode.hpp"

namespace polyinfer::cuda {
namespace {

constexpr int kChunk = 32;       // KV positions per block
constexpr int kLanesPerPos = 4;  // threads that share a position's dot products
constexpr int kThreads = kChunk * kLanesPerPos;
constexpr int kMaxGroup = 8;

// Eight K/V values from d0 on; `a16`: the row start is 16-byte aligned.
__device__ __forceinline__ void load8(uint32_t type, const uint8_t* row, int d0, bool a16,
                                      float out[8]) {
  if (type == kF16 && a16) {
    f16x8_to_f32(row + 2 * d0, out);
    return;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) out[e] = kv_elem(type, row, d0 + e);
}

// This thread's quarter of position j's dot products with the group's query
// heads, summed over the position's kLanesPerPos threads, scaled and masked;
// −inf for a masked or absent position (its K row is never read: a cache may
// hold anything there).
template <int D>
__device__ __forceinline__ void scores(const FaArgs& p, const float (*sq)[D], int group, int64_t j,
                                       int quarter, bool a16, float s[kMaxGroup]) {
  constexpr int kDims = D / kLanesPerPos;
  const bool live = j < p.k.ne[1];
  const float mj = live && p.mask.data ? reinterpret_cast<const float*>(p.mask.data)[j] : 0.0f;
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) s[g] = 0.0f;
  if (live && mj != -INFINITY) {
    const uint8_t* krow = p.k.data + blockIdx.x * p.k.nb[2] + j * p.k.nb[1];
    float kv[kDims];
#pragma unroll
    for (int d0 = 0; d0 < kDims; d0 += 8) load8(p.kt, krow, quarter * kDims + d0, a16, kv + d0);
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      if (g < group) {
#pragma unroll
        for (int e = 0; e < kDims; ++e) s[g] += sq[g][quarter * kDims + e] * kv[e];
      }
    }
  }
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
#pragma unroll
    for (int o = 1; o < kLanesPerPos; o <<= 1) s[g] += __shfl_xor_sync(0xffffffffu, s[g], o);
    s[g] = live && mj != -INFINITY ? s[g] * p.scale + mj : -INFINITY;
  }
}

template <int D>
__global__ __launch_bounds__(kThreads) void fa_decode_kernel(FaArgs p, bool k16, bool v4) {
  constexpr int kPairs = D / 2, kGroups = kThreads / kPairs, kPerThread = kChunk / kGroups;
  __shared__ float sq[kMaxGroup][D];
  __shared__ float sp[kMaxGroup][kChunk];  // scores, then probabilities
  __shared__ float sm[kMaxGroup], sl[kMaxGroup];
  __shared__ float red[kGroups][kMaxGroup][D];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int group = static_cast<int>(p.group);
  const int64_t hk = blockIdx.x, j0 = static_cast<int64_t>(blockIdx.y) * kChunk;

  for (int i = tid; i < group * D; i += kThreads) {
    sq[i / D][i % D] = reinterpret_cast<const float*>(row_at(p.q, 0, hk * group + i / D, 0))[i % D];
  }
  __syncthreads();
  {
    float s[kMaxGroup];
    scores<D>(p, sq, group, j0 + tid / kLanesPerPos, tid % kLanesPerPos, k16, s);
    if (tid % kLanesPerPos == 0) {
#pragma unroll
      for (int g = 0; g < kMaxGroup; ++g) {
        if (g < group) sp[g][tid / kLanesPerPos] = s[g];
      }
    }
  }
  __syncthreads();
  // Softmax of the chunk per head: a warp per head, a lane per position.
  for (int g = warp; g < group; g += kThreads / 32) {
    const float v = sp[g][lane];
    const float mx = warp_max(v);
    const float e = mx == -INFINITY ? 0.0f : expf(v - mx);
    sp[g][lane] = e;
    const float sum = warp_sum(e);
    if (lane == 0) {
      sm[g] = mx;
      sl[g] = sum;
    }
  }
  __syncthreads();
  // P·V: a thread owns two output dims of every head, over every kGroups-th
  // position; the loop is unrolled so that its V loads are in flight together.
  const int dp = tid % kPairs, grp = tid / kPairs;
  float acc[kMaxGroup][2] = {};
  const int64_t n = min(static_cast<int64_t>(kChunk), p.k.ne[1] - j0);
  const uint8_t* vbase = p.v.data + hk * p.v.nb[2] + j0 * p.v.nb[1];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int jj = grp + i * kGroups;
    float pg[kMaxGroup];
    bool any = false;
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      pg[g] = g < group ? sp[g][jj] : 0.0f;
      any |= pg[g] != 0.0f;
    }
    float2 v = make_float2(0.0f, 0.0f);
    if (any && jj < n) {  // a masked row is not read
      const uint8_t* vrow = vbase + jj * p.v.nb[1];
      if (p.vt == kF16 && v4) {
        v = __half22float2(*reinterpret_cast<const __half2*>(vrow + 4 * dp));
      } else {
        v = make_float2(kv_elem(p.vt, vrow, 2 * dp), kv_elem(p.vt, vrow, 2 * dp + 1));
      }
    }
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      acc[g][0] += pg[g] * v.x;
      acc[g][1] += pg[g] * v.y;
    }
  }
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    red[grp][g][2 * dp] = acc[g][0];
    red[grp][g][2 * dp + 1] = acc[g][1];
  }
  __syncthreads();
  for (int i = tid; i < group * D; i += kThreads) {
    const int g = i / D, d = i % D;
    float o = 0.0f;
#pragma unroll
    for (int r = 0; r < kGroups; ++r) o += red[r][g][d];
    const int64_t h = hk * group + g;
    if (gridDim.y == 1) {
      reinterpret_cast<float*>(row_at(p.o, h, 0, 0))[d] = sl[g] > 0.0f ? o / sl[g] : 0.0f;
      continue;
    }
    float* part = p.partial + (h * gridDim.y + blockIdx.y) * (D + 2);
    part[2 + d] = o;
    if (d == 0) {
      part[0] = sm[g];
      part[1] = sl[g];
    }
  }
}

bool aligned(const View& v, int bytes) {
  return reinterpret_cast<uintptr_t>(v.data) % bytes == 0 && v.nb[1] % bytes == 0 &&
         v.nb[2] % bytes == 0;
}

}  // namespace

bool flash_decode_fits(int64_t tokens, int64_t group, int64_t head_dim) {
  return tokens == 1 && group >= 1 && group <= kMaxGroup &&
         (head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256);
}

int flash_decode_splits(int64_t n_kv) {
  return static_cast<int>((n_kv + kChunk - 1) / kChunk);
}

void launch_flash_decode(const FaArgs& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.k.ne[2]), static_cast<unsigned>(p.nsplit));
  const bool k16 = aligned(p.k, 16), v4 = aligned(p.v, 4);
  switch (p.q.ne[0]) {
    case 32:
      fa_decode_kernel<32><<<grid, kThreads, 0, stream>>>(p, k16, v4);
      break;
    case 64:
      fa_decode_kernel<64><<<grid, kThreads, 0, stream>>>(p, k16, v4);
      break;
    case 128:
      fa_decode_kernel<128><<<grid, kThreads, 0, stream>>>(p, k16, v4);
      break;
    default:
      fa_decode_kernel<256><<<grid, kThreads, 0, stream>>>(p, k16, v4);
      break;
  }
  if (p.nsplit > 1) {
    fa_merge<<<static_cast<unsigned>(p.q.ne[2]), 64, 0, stream>>>(p);
  }
}

}  // namespace polyinfer::cuda
