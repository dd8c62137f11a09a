// FLASH_ATTN: fused attention with the online softmax, K/V in F32, F16 or
// Q8_0 read in place (strided KV-cache views), GQA by head index, optional
// mask. One query token with at most 8 heads per KV head goes to the decode
// kernel (flash_decode.cu); tensor-core tiles take F16 prefill (flash_prefill.cu). In the
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
#include "backends/cuda/flash_prefill.hpp"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/matvec.hpp"
#include "backends/cuda/pdl.cuh"

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
  pdl_start();
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
  if (flash_prefill_node(n)) return 1;
  return flash_decode_node(n) ? flash_decode_splits(n.src[1].ne[1]) : splits_for(n, kSplitSms);
}

size_t flash_attn_scratch(const pi_node& n) {
  if (flash_prefill_node(n)) return flash_prefill_scratch(n);
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
  // The tiles, unless a view's device address is not 16-byte aligned.
  if (flash_prefill_node(n) && launch_flash_prefill(p, scratch, stream)) return false;
  const unsigned rows = static_cast<unsigned>(n.src[0].ne[1] * n.src[0].ne[2]);
  launch_pdl(fa_kernel, dim3(rows, static_cast<unsigned>(p.nsplit)), kWarps * 32, 0, stream, p);
  if (p.nsplit > 1) launch_pdl(fa_merge, rows, 64, 0, stream, p);
  return false;
}

const char* launch_flash_attn(const LaunchContext& c) {
  launch_fa(c.node, c.src, c.dst, c.scratch, c.stream, nullptr, c.field);
  return nullptr;
}

}  // namespace

__global__ void fa_merge(FaArgs p) {
  pdl_start();
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
