// FLASH_ATTN: fused attention with the online softmax, K/V in F32, F16 or
// Q8_0 read in place (strided KV-cache views), GQA by head index, optional
// mask. One query token with at most 8 heads per KV head goes to the decode
// kernel (flash_decode.cu); tensor-core tiles take F16 prefill (below). In the
// general kernel a block of kWarps warps takes one (query token, head) row and a range
// of KV positions; each warp walks its share of the positions with its own
// running max/sum, and the warps are merged through shared memory. When the
// grid would have too few blocks (decode: one token), the KV range is split
// over several blocks and a second kernel merges the partial results
// (flash-decoding). Scores and P·V stay in float32.
#include <algorithm>

#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/flash_attn_common.cuh"
#include "backends/cuda/flash_decode.hpp"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/matvec.hpp"

namespace polyinfer::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kPerLane = kMaxD / 32;
// Fewest KV positions per split of the general kernel (few tokens that the
// decode and tensor-core kernels do not take). A warp walks its positions one
// after the other (load K row, reduce, exp, load V row), so short walks over
// many blocks win: at 128 positions per split a Llama-8B decode step at
// n_kv = 128 took 70 us per layer on the H200 (32 blocks, 32 serial steps
// per warp).
constexpr int64_t kMinSplitKv = 16;
// Blocks wanted per multiprocessor when splitting.
constexpr int64_t kSplitBlocksPerSm = 8;

__global__ __launch_bounds__(kWarps * 32) void fa_kernel(FaArgs p) {
  __shared__ float sm_m[kWarps], sm_l[kWarps];
  __shared__ float sm_o[kWarps][kMaxD];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t nh = p.q.ne[2];
  const int64_t row = blockIdx.x, t = row / nh, h = row % nh;
  const int D = static_cast<int>(p.q.ne[0]);
  const int64_t n_kv = p.k.ne[1], hk = h / p.group;
  const int64_t per_split = (n_kv + p.nsplit - 1) / p.nsplit;
  const int64_t j0 = blockIdx.y * per_split, j1 = min(n_kv, j0 + per_split);

  const float* qrow = reinterpret_cast<const float*>(row_at(p.q, t, h, 0));
  float q[kPerLane], acc[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    q[i] = d < D ? qrow[d] : 0.0f;
    acc[i] = 0.0f;
  }
  const float* mrow =
      p.mask.data ? reinterpret_cast<const float*>(p.mask.data + t * p.mask.nb[1]) : nullptr;
  const uint8_t* kbase = p.k.data + hk * p.k.nb[2];
  const uint8_t* vbase = p.v.data + hk * p.v.nb[2];
  float m = -INFINITY, l = 0.0f;
  for (int64_t j = j0 + warp; j < j1; j += kWarps) {
    const float mj = mrow ? mrow[j] : 0.0f;
    if (mj == -INFINITY) continue;  // uniform across the warp
    const uint8_t* krow = kbase + j * p.k.nb[1];
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < D) dot += q[i] * kv_elem(p.kt, krow, d);
    }
    const float s = warp_sum(dot) * p.scale + mj;
    const float m_new = fmaxf(m, s);
    const float corr = expf(m - m_new), e = expf(s - m_new);
    l = l * corr + e;
    m = m_new;
    const uint8_t* vrow = vbase + j * p.v.nb[1];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int d = lane + 32 * i;
      if (d < D) acc[i] = acc[i] * corr + e * kv_elem(p.vt, vrow, d);
    }
  }
  if (lane == 0) {
    sm_m[warp] = m;
    sm_l[warp] = l;
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int d = lane + 32 * i;
    if (d < D) sm_o[warp][d] = acc[i];
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, sm_m[w]);
  float sum = 0.0f;
  for (int w = 0; w < kWarps; ++w)
    sum += sm_m[w] == -INFINITY ? 0.0f : sm_l[w] * expf(sm_m[w] - mx);
  if (p.nsplit == 1) {
    float* out = reinterpret_cast<float*>(row_at(p.o, h, t, 0));
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
      float o = 0.0f;
      for (int w = 0; w < kWarps; ++w)
        o += sm_m[w] == -INFINITY ? 0.0f : sm_o[w][d] * expf(sm_m[w] - mx);
      out[d] = sum > 0.0f ? o / sum : 0.0f;  // a fully masked row gives 0s
    }
    return;
  }
  float* part = p.partial + (row * p.nsplit + blockIdx.y) * (D + 2);
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float o = 0.0f;
    for (int w = 0; w < kWarps; ++w)
      o += sm_m[w] == -INFINITY ? 0.0f : sm_o[w][d] * expf(sm_m[w] - mx);
    part[2 + d] = o;
  }
  if (threadIdx.x == 0) {
    part[0] = mx;
    part[1] = sum;
  }
}

// ---- prefill: tensor-core tiles --------------------------------------------
//
// K and V in F16, D a multiple of 16 up to 128, T > 1: a block of 4 warps
// takes 64 query tokens of one head; each warp owns 16 of them. K/V tiles of
// 64 positions are staged in shared memory (V transposed), S = Q·Kᵀ and
// O += P·V run on mma.sync m16n8k16 (F16 inputs, float32 accumulation), the
// online softmax in float32 registers. q is rounded to F16 for the dot
// product and p to F16 once for P·V (docs/OPS.md allows both). KV tiles
// whose mask is all −inf for the block's tokens are skipped.
constexpr int kTq = 64, kTk = 64, kTcWarps = 4;

__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

template <int D>
__global__ __launch_bounds__(kTcWarps * 32) void fa_tc_kernel(FaArgs p) {
  constexpr int kKs = D + 8;    // K tile row stride (halves)
  constexpr int kVs = kTk + 8;  // transposed V tile row stride (halves)
  __shared__ __align__(16) uint16_t sk[kTk * kKs];
  __shared__ __align__(16) uint16_t sv[D * kVs];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, tq = lane % 4;
  const int64_t T = p.q.ne[1], n_kv = p.k.ne[1];
  const int64_t h = blockIdx.y, hk = h / p.group;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kTq;
  const int64_t r0 = t0 + warp * 16 + g, r1 = r0 + 8;  // this lane's two query rows

  // Q fragments (A operand, row major): row g / g+8, columns 2tq, 2tq+1 (+8).
  uint32_t qf[D / 16][4];
  {
    const float* q0 = r0 < T ? reinterpret_cast<const float*>(row_at(p.q, r0, h, 0)) : nullptr;
    const float* q1 = r1 < T ? reinterpret_cast<const float*>(row_at(p.q, r1, h, 0)) : nullptr;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const int c = kk * 16 + 2 * tq;
      qf[kk][0] = q0 ? pack_half2(q0[c], q0[c + 1]) : 0u;
      qf[kk][1] = q1 ? pack_half2(q1[c], q1[c + 1]) : 0u;
      qf[kk][2] = q0 ? pack_half2(q0[c + 8], q0[c + 9]) : 0u;
      qf[kk][3] = q1 ? pack_half2(q1[c + 8], q1[c + 9]) : 0u;
    }
  }
  const float* m0 = p.mask.data && r0 < T
                        ? reinterpret_cast<const float*>(p.mask.data + r0 * p.mask.nb[1])
                        : nullptr;
  const float* m1 = p.mask.data && r1 < T
                        ? reinterpret_cast<const float*>(p.mask.data + r1 * p.mask.nb[1])
                        : nullptr;
  float o[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  float mx0 = -INFINITY, mx1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
  const uint8_t* kbase = p.k.data + hk * p.k.nb[2];
  const uint8_t* vbase = p.v.data + hk * p.v.nb[2];
  const int64_t t_end = min(T, t0 + kTq);

  for (int64_t j0 = 0; j0 < n_kv; j0 += kTk) {
    const int64_t j_end = min(n_kv, j0 + kTk);
    // Skip a tile that every token of the block has masked out.
    bool live = p.mask.data == nullptr;
    if (!live) {
      for (int i = threadIdx.x; i < kTq * kTk && !live; i += kTcWarps * 32) {
        const int64_t t = t0 + i / kTk, j = j0 + i % kTk;
        if (t < t_end && j < j_end) {
          live = reinterpret_cast<const float*>(p.mask.data + t * p.mask.nb[1])[j] != -INFINITY;
        }
      }
    }
    if (!__syncthreads_or(live)) continue;
    // Pairs of values (4-byte loads: use_tc() checks the alignment).
    for (int i = threadIdx.x; i < kTk * D / 2; i += kTcWarps * 32) {
      const int jj = i / (D / 2), d = 2 * (i % (D / 2));
      const int64_t j = j0 + jj;
      uint32_t kv = 0, vv = 0;
      if (j < j_end) {
        kv = *reinterpret_cast<const uint32_t*>(kbase + j * p.k.nb[1] + 2 * d);
        vv = *reinterpret_cast<const uint32_t*>(vbase + j * p.v.nb[1] + 2 * d);
      }
      *reinterpret_cast<uint32_t*>(sk + jj * kKs + d) = kv;
      sv[d * kVs + jj] = static_cast<uint16_t>(vv & 0xffffu);
      sv[(d + 1) * kVs + jj] = static_cast<uint16_t>(vv >> 16);
    }
    __syncthreads();

    // S = Q·Kᵀ for 16 rows × 64 positions: 8 tiles of 8 columns.
    float s[kTk / 8][4];
#pragma unroll
    for (int nt = 0; nt < kTk / 8; ++nt) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
      const uint16_t* kr = sk + (nt * 8 + g) * kKs + 2 * tq;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        const uint32_t b0 = *reinterpret_cast<const uint32_t*>(kr + kk * 16);
        const uint32_t b1 = *reinterpret_cast<const uint32_t*>(kr + kk * 16 + 8);
        mma16816(s[nt], qf[kk], b0, b1);
      }
    }
    // Scale, mask, running max.
    float tmax0 = -INFINITY, tmax1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kTk / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t j = j0 + nt * 8 + 2 * tq + e;
        float a = s[nt][e] * p.scale, b = s[nt][2 + e] * p.scale;
        if (j >= j_end) {
          a = b = -INFINITY;
        } else {
          if (m0) a += m0[j];
          if (m1) b += m1[j];
        }
        s[nt][e] = a;
        s[nt][2 + e] = b;
        tmax0 = fmaxf(tmax0, a);
        tmax1 = fmaxf(tmax1, b);
      }
    }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      tmax0 = fmaxf(tmax0, __shfl_xor_sync(0xffffffffu, tmax0, off));
      tmax1 = fmaxf(tmax1, __shfl_xor_sync(0xffffffffu, tmax1, off));
    }
    const float new0 = fmaxf(mx0, tmax0), new1 = fmaxf(mx1, tmax1);
    const float c0 = new0 == -INFINITY ? 1.0f : expf(mx0 - new0);
    const float c1 = new1 == -INFINITY ? 1.0f : expf(mx1 - new1);
    mx0 = new0;
    mx1 = new1;
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int nt = 0; nt < kTk / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float a = new0 == -INFINITY ? 0.0f : expf(s[nt][e] - new0);
        const float b = new1 == -INFINITY ? 0.0f : expf(s[nt][2 + e] - new1);
        s[nt][e] = a;
        s[nt][2 + e] = b;
        sum0 += a;
        sum1 += b;
      }
    }
    l0 = l0 * c0 + sum0;
    l1 = l1 * c1 + sum1;
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      o[i][0] *= c0;
      o[i][1] *= c0;
      o[i][2] *= c1;
      o[i][3] *= c1;
    }
    // O += P·V: P's accumulator layout is the A operand's layout.
#pragma unroll
    for (int kk = 0; kk < kTk / 16; ++kk) {
      const uint32_t a[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]),
                             pack_half2(s[2 * kk][2], s[2 * kk][3]),
                             pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        const uint16_t* vr = sv + (dt * 8 + g) * kVs + kk * 16 + 2 * tq;
        mma16816(o[dt], a, *reinterpret_cast<const uint32_t*>(vr),
                 *reinterpret_cast<const uint32_t*>(vr + 8));
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
  float* out0 = r0 < T ? reinterpret_cast<float*>(row_at(p.o, h, r0, 0)) : nullptr;
  float* out1 = r1 < T ? reinterpret_cast<float*>(row_at(p.o, h, r1, 0)) : nullptr;
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    const int c = dt * 8 + 2 * tq;
    if (out0) {
      out0[c] = o[dt][0] * inv0;
      out0[c + 1] = o[dt][1] * inv0;
    }
    if (out1) {
      out1[c] = o[dt][2] * inv1;
      out1[c + 1] = o[dt][3] * inv1;
    }
  }
}

bool aligned4(const pi_tensor& t) {
  return t.offset % 4 == 0 && t.nb[1] % 4 == 0 && t.nb[2] % 4 == 0;
}

bool use_tc(const pi_node& n) {
  const int64_t d = n.src[0].ne[0];
  return n.src[0].ne[1] > 1 && n.src[1].type == kF16 && n.src[2].type == kF16 &&
         aligned4(n.src[1]) && aligned4(n.src[2]) && (d == 32 || d == 64 || d == 128) &&
         n.src[0].ne[2] <= 65535;
}

bool kv_type_ok(const pi_tensor& t) {
  if (t.type == kF32)
    return t.nb[0] == 4 && t.offset % 4 == 0 && t.nb[1] % 4 == 0 && t.nb[2] % 4 == 0;
  if (t.type == kF16)
    return t.nb[0] == 2 && t.offset % 2 == 0 && t.nb[1] % 2 == 0 && t.nb[2] % 2 == 0;
  if (t.type == kQ8_0) {
    return t.nb[0] == 34 && t.ne[0] % 32 == 0 && t.offset % 2 == 0 && t.nb[1] % 2 == 0 &&
           t.nb[2] % 2 == 0;
  }
  return false;
}

int splits_for(const pi_node& n, int sm_count) {
  const int64_t rows = n.src[0].ne[1] * n.src[0].ne[2], n_kv = n.src[1].ne[1];
  const int64_t want = (kSplitBlocksPerSm * sm_count + rows - 1) / rows;
  const int64_t most = std::max<int64_t>(1, n_kv / kMinSplitKv);
  return static_cast<int>(std::clamp<int64_t>(want, 1, std::min<int64_t>(most, 64)));
}

// Splits are sized for the H200's 132 multiprocessors when the node alone
// is known (scratch is sized before launch); launch uses the same count.
constexpr int kSplitSms = 132;

bool supports_flash_attn(const pi_node& n) {
  const pi_tensor &q = n.src[0], &k = n.src[1], &v = n.src[2], &m = n.src[3], &o = n.dst;
  const int64_t d = q.ne[0], t = q.ne[1], h = q.ne[2];
  if (!is_f32_rows(q) || !kv_type_ok(k) || !kv_type_ok(v) || !is_f32_rows(o)) return false;
  if (d <= 0 || d > kMaxD || k.ne[0] != d || v.ne[0] != d || v.ne[1] != k.ne[1] ||
      v.ne[2] != k.ne[2]) {
    return false;
  }
  if (k.ne[2] <= 0 || h % k.ne[2] != 0 || q.ne[3] != 1 || k.ne[3] != 1 || v.ne[3] != 1)
    return false;
  if (o.ne[0] != d || o.ne[1] != h || o.ne[2] != t || t * h > (int64_t{1} << 30)) return false;
  return !present(m) || (is_f32_rows(m) && m.ne[0] == k.ne[1] && m.ne[1] >= t);
}

// KV splits of the node's kernel (1: none); launch and scratch agree on it.
int splits(const pi_node& n) {
  if (use_tc(n)) return 1;
  return flash_decode_node(n) ? flash_decode_splits(n.src[1].ne[1]) : splits_for(n, kSplitSms);
}

size_t flash_attn_scratch(const pi_node& n) {
  const int ns = splits(n);
  if (ns == 1) return 0;
  return static_cast<size_t>(n.src[0].ne[1] * n.src[0].ne[2] * ns * (n.src[0].ne[0] + 2)) *
         sizeof(float);
}

// Enqueues node n's kernels; quant (may be null): the short decode kernel
// also writes its output as 8-bit blocks there (FaArgs::quant). Whether it
// did. n_kv_field: the decode kernels' KV length in device memory, or null.
bool launch_fa(const pi_node& n, const View* src, const View& dst, uint8_t* scratch,
               cudaStream_t stream, const ActQuantPtrs* quant, const int64_t* n_kv_field) {
  FaArgs p{src[0],
           src[1],
           src[2],
           src[3],
           dst,
           n.src[1].type,
           n.src[2].type,
           n.f[0],
           n.src[0].ne[2] / n.src[1].ne[2],
           splits(n),
           reinterpret_cast<float*>(scratch)};
  if (flash_decode_node(n)) {
    p.n_kv_field = n_kv_field;
    const bool inline_quant = quant != nullptr && p.nsplit == 1;  // the short kernel
    if (inline_quant) p.quant = *quant;
    launch_flash_decode(p, stream);
    return inline_quant;
  }
  if (use_tc(n)) {
    const dim3 grid(static_cast<unsigned>((n.src[0].ne[1] + kTq - 1) / kTq),
                    static_cast<unsigned>(n.src[0].ne[2]));
    switch (n.src[0].ne[0]) {
      case 32:
        fa_tc_kernel<32><<<grid, kTcWarps * 32, 0, stream>>>(p);
        break;
      case 64:
        fa_tc_kernel<64><<<grid, kTcWarps * 32, 0, stream>>>(p);
        break;
      default:
        fa_tc_kernel<128><<<grid, kTcWarps * 32, 0, stream>>>(p);
        break;
    }
    return false;
  }
  const unsigned rows = static_cast<unsigned>(n.src[0].ne[1] * n.src[0].ne[2]);
  fa_kernel<<<dim3(rows, static_cast<unsigned>(p.nsplit)), kWarps * 32, 0, stream>>>(p);
  if (p.nsplit > 1) fa_merge<<<rows, 64, 0, stream>>>(p);
  return false;
}

const char* launch_flash_attn(const LaunchContext& c) {
  launch_fa(c.node, c.src, c.dst, c.scratch, c.stream, nullptr, c.field);
  return nullptr;
}

}  // namespace

__global__ void fa_merge(FaArgs p) {
  const int64_t nh = p.q.ne[2];
  const int64_t row = blockIdx.x, t = row / nh, h = row % nh;
  const int D = static_cast<int>(p.q.ne[0]);
  const float* part = p.partial + row * p.nsplit * (D + 2);
  float mx = -INFINITY;
  for (int s = 0; s < p.nsplit; ++s) mx = fmaxf(mx, part[s * (D + 2)]);
  float sum = 0.0f;
  for (int s = 0; s < p.nsplit; ++s) {
    const float ms = part[s * (D + 2)];
    sum += ms == -INFINITY ? 0.0f : part[s * (D + 2) + 1] * expf(ms - mx);
  }
  float* out = reinterpret_cast<float*>(row_at(p.o, h, t, 0));
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float o = 0.0f;
    for (int s = 0; s < p.nsplit; ++s) {
      const float ms = part[s * (D + 2)];
      if (ms != -INFINITY) o += part[s * (D + 2) + 2 + d] * expf(ms - mx);
    }
    out[d] = sum > 0.0f ? o / sum : 0.0f;
  }
}

const OpImpl kOpFlashAttn{supports_flash_attn, flash_attn_scratch, launch_flash_attn};

const char* launch_attn_quant(const UnitContext& c) {
  const View& o = c.views[0].dst;
  // The product reads the contiguous output as one column of D x H values.
  View flat = o;
  flat.ne[0] = o.ne[0] * o.ne[1] * o.ne[2] * o.ne[3];
  flat.ne[1] = flat.ne[2] = flat.ne[3] = 1;
  flat.nb[1] = flat.nb[2] = flat.nb[3] = 4 * flat.ne[0];
  const ActQuantPtrs q = act_quant_at(c.scratch, flat.ne[0], 1, c.quantize_residual);
  // After the kernels: a split launch keeps its partials in the same scratch.
  if (!launch_fa(c.nodes[0], c.views[0].src, o, c.scratch, c.stream, &q, c.field[0]))
    launch_quantize_act(flat, 1, q, c.stream);
  *c.act_cache = ActQuantCache{flat.data, flat.ne[0], 1, flat.nb[1], c.quantize_residual, true};
  return nullptr;
}

}  // namespace polyinfer::cuda
