#include <algorithm>
#include <type_traits>

#include "backends/cuda/flash_decode.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

constexpr int kChunk = kFlashChunk;  // KV positions per block
constexpr int kLanesPerPos = 4;      // threads that share a position's dot products
constexpr int kThreads = kChunk * kLanesPerPos;
constexpr int kMaxGroup = kFlashMaxGroup;

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
                                       int64_t n_kv, int quarter, bool a16, float s[kMaxGroup]) {
  constexpr int kDims = D / kLanesPerPos;
  const bool live = j < n_kv;
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
  pdl_start();
  constexpr int kPairs = D / 2, kGroups = kThreads / kPairs, kPerThread = kChunk / kGroups;
  __shared__ float sq[kMaxGroup][D];
  __shared__ float sp[kMaxGroup][kChunk];  // scores, then probabilities
  __shared__ float sm[kMaxGroup], sl[kMaxGroup];
  __shared__ float red[kGroups][kMaxGroup][D];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int group = static_cast<int>(p.group);
  const int64_t hk = blockIdx.x, j0 = static_cast<int64_t>(blockIdx.y) * kChunk;
  const int64_t n_kv = kv_length(p);

  for (int i = tid; i < group * D; i += kThreads) {
    sq[i / D][i % D] = reinterpret_cast<const float*>(row_at(p.q, 0, hk * group + i / D, 0))[i % D];
  }
  __syncthreads();
  {
    float s[kMaxGroup];
    scores<D>(p, sq, group, j0 + tid / kLanesPerPos, n_kv, tid % kLanesPerPos, k16, s);
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
  const int64_t n = min(static_cast<int64_t>(kChunk), n_kv - j0);
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

// ---- short KV: a block per query head -------------------------------------
//
// For n_kv <= kShortKv the kernel above leaves the GPU nearly idle: a decode
// step at n_kv <= 32 is 8 blocks (one per KV head) that each walk a chain of
// dependent loads and four barriers (9-11 us on the H200). Here a block of
// 16 warps takes one query head, so 32 query heads are 32 blocks and no
// merge kernel runs. A warp takes P positions per pass (128 positions per
// pass of the block; 64 for D = 256): lane e < P reads position e's mask
// while every lane loads its D/32 dimensions of the pass's K and V rows (the
// rows in range are read whatever their mask, so the mask costs no second
// round trip), then the warp folds the pass into its running max, sum and
// output (online softmax). One barrier merges the warps. K/V rows are read
// once per query head (from L2 for the group's other heads), which the
// long-context kernel above avoids. (With 8 warps per block and a merge
// kernel past 64 positions, a step took 10.7 us at 16-64 positions and
// 10.7 + 5.0 us past 64.)
constexpr int kShortWarps = 16;
constexpr int64_t kShortKv = kFlashShortKv;

// Positions per warp: the K and V values a lane holds stay at 64 floats (32
// words of half pairs for F16 rows, PassRows).
__host__ __device__ constexpr int short_positions(int64_t head_dim) {
  return head_dim == 256 ? 4 : 8;
}

// E values of a K/V row from d0 on, as float32; `vec`: the row start is
// aligned to 2E bytes (F16 in one load).
template <int E>
__device__ __forceinline__ void load_kv(uint32_t type, const uint8_t* row, int d0, bool vec,
                                        float out[E]) {
  if (type == kF16 && vec) {
    const uint8_t* at = row + 2 * d0;
    if constexpr (E == 8) {
      f16x8_to_f32(at, out);
    } else if constexpr (E == 4) {
      const uint2 u = *reinterpret_cast<const uint2*>(at);
      const float2 f0 = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
      const float2 f1 = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
      out[0] = f0.x;
      out[1] = f0.y;
      out[2] = f1.x;
      out[3] = f1.y;
    } else if constexpr (E == 2) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(at));
      out[0] = f.x;
      out[1] = f.y;
    } else {
      out[0] = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(at));
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < E; ++e) out[e] = kv_elem(type, row, d0 + e);
}

// One pass of a warp: a lane's D/32 dimensions of the K and V rows of
// positions j0 .. j0 + P - 1 (zeros where not loaded), and lane e < P's mask
// of position j0 + e (−inf when masked or absent). H: F16 rows kept as their
// half pairs (half the registers; converted where used).
template <int D, bool H>
struct PassRows {
  static_assert(!H || D >= 64, "half pairs need two values per lane");
  static constexpr int kW = H ? D / 64 : D / 32;  // words per lane and row
  using Word = std::conditional_t<H, uint32_t, float>;
  Word k[short_positions(D)][kW], v[short_positions(D)][kW];
  float mask;
};

template <int D, bool H>
__device__ __forceinline__ void clear_rows(PassRows<D, H>& r) {
#pragma unroll
  for (int i = 0; i < short_positions(D); ++i) {
#pragma unroll
    for (int e = 0; e < PassRows<D, H>::kW; ++e) r.k[i][e] = r.v[i][e] = 0;
  }
  r.mask = -INFINITY;
}

// W 4-byte words at a 4W-byte aligned address.
template <int W>
__device__ __forceinline__ void load_words(const uint8_t* at, uint32_t out[W]) {
  static_assert(W == 1 || W == 2 || W == 4);
  if constexpr (W == 4) {
    const uint4 u = *reinterpret_cast<const uint4*>(at);
    out[0] = u.x, out[1] = u.y, out[2] = u.z, out[3] = u.w;
  } else if constexpr (W == 2) {
    const uint2 u = *reinterpret_cast<const uint2*>(at);
    out[0] = u.x, out[1] = u.y;
  } else {
    out[0] = *reinterpret_cast<const uint32_t*>(at);
  }
}

// Loads the pass's rows of positions in [lo, hi).
template <int D, bool H>
__device__ __forceinline__ void load_rows(const FaArgs& p, int64_t hk, int64_t j0, int64_t lo,
                                          int64_t hi, bool k_vec, bool v_vec, PassRows<D, H>& r) {
  constexpr int E = D / 32;
  const int lane = threadIdx.x % 32;
  const uint8_t* kbase = p.k.data + hk * p.k.nb[2] + j0 * p.k.nb[1];
  const uint8_t* vbase = p.v.data + hk * p.v.nb[2] + j0 * p.v.nb[1];
#pragma unroll
  for (int i = 0; i < short_positions(D); ++i) {
    if (j0 + i >= lo && j0 + i < hi) {  // uniform across the warp
      if constexpr (H) {
        load_words<E / 2>(kbase + i * p.k.nb[1] + 2 * lane * E, r.k[i]);
        load_words<E / 2>(vbase + i * p.v.nb[1] + 2 * lane * E, r.v[i]);
      } else {
        load_kv<E>(p.kt, kbase + i * p.k.nb[1], lane * E, k_vec, r.k[i]);
        load_kv<E>(p.vt, vbase + i * p.v.nb[1], lane * E, v_vec, r.v[i]);
      }
    }
  }
}

// A row's words as its E float32 values.
template <int E, typename Word>
__device__ __forceinline__ void row_values(const Word* w, float out[E]) {
  if constexpr (std::is_same_v<Word, uint32_t>) {
#pragma unroll
    for (int i = 0; i < E / 2; ++i) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < E; ++i) out[i] = w[i];
  }
}

template <int D, bool H>
__device__ __forceinline__ void load_mask(const FaArgs& p, int64_t j0, int64_t n_kv,
                                          PassRows<D, H>& r) {
  const int lane = threadIdx.x % 32;
  if (lane < short_positions(D) && j0 + lane < n_kv)
    r.mask = p.mask.data ? reinterpret_cast<const float*>(p.mask.data)[j0 + lane] : 0.0f;
}

// Folds a pass's rows into the warp's running max m, sum l and unnormalized
// output acc (online softmax). The rows in range are read whatever their
// mask, so the mask costs no second round trip.
template <int D, bool H>
__device__ __forceinline__ void short_pass(const FaArgs& p, const float q[D / 32],
                                           const PassRows<D, H>& r, float& m, float& l,
                                           float acc[D / 32]) {
  constexpr int E = D / 32, P = short_positions(D);
  const unsigned live = __ballot_sync(0xffffffffu, r.mask != -INFINITY);
  float s[P], mx = m;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    float kv[E];
    row_values<E>(r.k[i], kv);
    float dot = 0.0f;
#pragma unroll
    for (int e = 0; e < E; ++e) dot += q[e] * kv[e];
    dot = warp_sum(dot);
    const float mi = __shfl_sync(0xffffffffu, r.mask, i);
    s[i] = live >> i & 1u ? dot * p.scale + mi : -INFINITY;
    mx = fmaxf(mx, s[i]);
  }
  if (mx == -INFINITY) return;   // nothing live so far (no exp of −inf − −inf)
  const float c = expf(m - mx);  // 0 when m is still −inf
  l *= c;
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] *= c;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const float pr = live >> i & 1u ? expf(s[i] - mx) : 0.0f;
    l += pr;
    float vv[E];
    row_values<E>(r.v[i], vv);
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] += pr * vv[e];
  }
  m = mx;
}

// Before its PDL wait the kernel reads what the host uploaded for the step
// (n_kv and the AttnField terms) and, where those allow, the mask and the K/V
// rows of its first pass that no node of the graph writes: in a decode step
// every row but the new token's, which the ROPE + KV unit just before it
// writes. Those loads then overlap the kernels before it, and only the new
// row, Q and the fold follow the wait.
// (At least one block per multiprocessor: without that bound ptxas spilled
// 16 bytes for D = 128 at 80 registers.)
template <int D, bool H>
__global__ __launch_bounds__(kShortWarps * 32, 1) void fa_decode_short_kernel(FaArgs p, bool k_vec,
                                                                              bool v_vec) {
  constexpr int E = D / 32, P = short_positions(D);
  __shared__ float sm[kShortWarps], sl[kShortWarps];
  __shared__ float so[kShortWarps][D];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t h = blockIdx.x, hk = h / p.group, n_kv = kv_length(p);
  const int64_t n_early = min(kv_early(p), n_kv);
  const bool m_early = mask_early(p);
  int64_t j0 = warp * P;
  PassRows<D, H> r;
  clear_rows(r);
  if (m_early) load_mask(p, j0, n_kv, r);
  load_rows(p, hk, j0, 0, n_early, k_vec, v_vec, r);
  pdl_start();
  if (!m_early) load_mask(p, j0, n_kv, r);
  load_rows(p, hk, j0, n_early, n_kv, k_vec, v_vec, r);

  const float* qrow = reinterpret_cast<const float*>(row_at(p.q, 0, h, 0));
  float q[E];
#pragma unroll
  for (int e = 0; e < E; ++e) q[e] = qrow[lane * E + e];
  float m = -INFINITY, l = 0.0f, acc[E] = {};
  if (j0 < n_kv) short_pass<D, H>(p, q, r, m, l, acc);
  for (j0 += kShortWarps * P; j0 < n_kv; j0 += kShortWarps * P) {
    clear_rows(r);
    load_mask(p, j0, n_kv, r);
    load_rows(p, hk, j0, 0, n_kv, k_vec, v_vec, r);
    short_pass<D, H>(p, q, r, m, l, acc);
  }
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
#pragma unroll
  for (int e = 0; e < E; ++e) so[warp][lane * E + e] = acc[e];
  __syncthreads();
  const int d = threadIdx.x;  // D <= 256 < the block
  if (d >= D) return;
  float m_all = -INFINITY;
#pragma unroll
  for (int w = 0; w < kShortWarps; ++w) m_all = fmaxf(m_all, sm[w]);
  float l_all = 0.0f, o = 0.0f;
#pragma unroll
  for (int w = 0; w < kShortWarps; ++w) {
    if (sm[w] != -INFINITY) {
      const float c = expf(sm[w] - m_all);
      l_all += sl[w] * c;
      o += so[w][d] * c;
    }
  }
  const float out = l_all > 0.0f ? o / l_all : 0.0f;
  reinterpret_cast<float*>(row_at(p.o, h, 0, 0))[d] = out;
  // Warp w < D / 32 holds one 32-value block of the flat [D x H] output.
  if (p.quant.aq != nullptr) quantize_block32(out, (h * D + d) / 32, p.quant);
}

bool aligned(const View& v, int bytes) {
  return reinterpret_cast<uintptr_t>(v.data) % bytes == 0 && v.nb[1] % bytes == 0 &&
         v.nb[2] % bytes == 0;
}

// The GQA kernel above, a block per (KV head, 32 positions).
void launch_long(const FaArgs& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.k.ne[2]), static_cast<unsigned>(p.nsplit));
  const bool k16 = aligned(p.k, 16), v4 = aligned(p.v, 4);
  switch (p.q.ne[0]) {
    case 32:
      launch_pdl(fa_decode_kernel<32>, grid, kThreads, 0, stream, p, k16, v4);
      break;
    case 64:
      launch_pdl(fa_decode_kernel<64>, grid, kThreads, 0, stream, p, k16, v4);
      break;
    case 128:
      launch_pdl(fa_decode_kernel<128>, grid, kThreads, 0, stream, p, k16, v4);
      break;
    default:
      launch_pdl(fa_decode_kernel<256>, grid, kThreads, 0, stream, p, k16, v4);
      break;
  }
}

template <int D>
void launch_short(bool h, dim3 grid, const FaArgs& p, bool k_vec, bool v_vec, cudaStream_t stream) {
  if (h)
    launch_pdl(fa_decode_short_kernel<D, true>, grid, kShortWarps * 32, 0, stream, p, k_vec, v_vec);
  else
    launch_pdl(fa_decode_short_kernel<D, false>, grid, kShortWarps * 32, 0, stream, p, k_vec,
               v_vec);
}

}  // namespace

void launch_flash_decode(const FaArgs& p, cudaStream_t stream) {
  if (p.k.ne[1] <= kShortKv) {
    const dim3 grid(static_cast<unsigned>(p.q.ne[2]));
    // F16 rows load in one piece when aligned to a lane's D/32 values.
    const int bytes = static_cast<int>(p.q.ne[0] / 16);
    const bool k_vec = aligned(p.k, bytes), v_vec = aligned(p.v, bytes);
    // F16 caches whose rows load in one piece keep the rows' half pairs: for
    // D = 128, 86 registers against 127, so that a block no longer needs a
    // whole multiprocessor's register file to start (H100, session 21, tg128:
    // llama-8b Q4_K_M 317-327 against 302-306 tok/s, llama-1b Q4_K_M 1,230
    // against 1,175-1,187). D = 32 has a single value per lane.
    const bool h = p.kt == kF16 && p.vt == kF16 && k_vec && v_vec;
    switch (p.q.ne[0]) {
      case 32:
        launch_pdl(fa_decode_short_kernel<32, false>, grid, kShortWarps * 32, 0, stream, p, k_vec,
                   v_vec);
        break;
      case 64:
        launch_short<64>(h, grid, p, k_vec, v_vec, stream);
        break;
      case 128:
        launch_short<128>(h, grid, p, k_vec, v_vec, stream);
        break;
      default:
        launch_short<256>(h, grid, p, k_vec, v_vec, stream);
        break;
    }
  } else {
    launch_long(p, stream);
  }
  if (p.nsplit > 1) launch_pdl(fa_merge, static_cast<unsigned>(p.q.ne[2]), 64, 0, stream, p);
}

}  // namespace polyinfer::cuda
