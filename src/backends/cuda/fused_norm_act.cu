// The fused producers of a matrix-vector product's activations (fusion.hpp):
// [ADD,] RMS_NORM, MUL(norm, w) (a few rows: norm_split.hpp; more: one block
// per row), and SWIGLU, each able to write its output as 8-bit blocks for the
// quantized product that follows (act_quant.cuh), which then skips its
// quantize kernel. Every node's dst is
// written, so later readers of an intermediate see what the unfused ops give.
#include "backends/cuda/act_quant.cuh"
#include "backends/cuda/act_quant_cache.hpp"
#include "backends/cuda/activations.cuh"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/matvec.hpp"
#include "backends/cuda/norm_rows.hpp"
#include "backends/cuda/norm_split.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

// As ops_norm.cu: a few rows (decode) get 1,024 threads each.
constexpr int kThreads = 256, kThreadsFewRows = 1024, kFewRows = 64;

// Values a thread keeps in registers between the two passes: a row of up to
// kMaxPer x 1,024 values. Its loads are all issued before the first use, so a
// decode row costs one memory latency per pass, not one per loop iteration
// (a 4,096-value ADD+RMS_NORM+MUL took 10 us looping, on the H200).
constexpr int kMaxPer = 8;
static_assert(kMaxPer * kThreadsFewRows == kMaxFusedNormRow);

__global__ __launch_bounds__(kThreadsFewRows) void norm_mul_kernel(NormArgs p) {
  pdl_start();
  __shared__ float tmp[32];
  const int64_t rows = p.a.ne[1] * p.a.ne[2] * p.a.ne[3], k = p.a.ne[0];
  const bool add = p.b.data != nullptr;
  const int stride = blockDim.x;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* x = reinterpret_cast<const float*>(row_flat(p.a, r));
    const float* y = add ? reinterpret_cast<const float*>(row_flat(p.b, r)) : nullptr;
    float* s = add ? reinterpret_cast<float*>(row_flat(p.sum, r)) : nullptr;
    float v[kMaxPer], w[kMaxPer];
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(j) * stride;
      if (i < k) {
        v[j] = add ? x[i] + y[i] : x[i];
        w[j] = reinterpret_cast<const float*>(p.w.data)[i];
      }
    }
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(j) * stride;
      if (i < k) {
        if (add) s[i] = v[j];
        ss += v[j] * v[j];
      }
    }
    const float scale = 1.0f / sqrtf(block_sum(ss, tmp) / static_cast<float>(k) + p.eps);
    float* n = reinterpret_cast<float*>(row_flat(p.norm, r));
    float* o = reinterpret_cast<float*>(row_flat(p.out, r));
#pragma unroll
    for (int j = 0; j < kMaxPer; ++j) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(j) * stride;
      if (i < k) {
        const float nv = v[j] * scale, ov = nv * w[j];
        n[i] = nv;
        o[i] = ov;
        // A warp's 32 lanes hold one whole 32-value block (k % 32 == 0).
        if (p.q.aq) quantize_block32(ov, (r * k + i) / 32, p.q);
      }
    }
  }
}

// out = silu(gate) · up over rows of k values (k % 32 == 0), quantized too.
__global__ void swiglu_quant_kernel(View g, View u, View d, ActQuantPtrs q) {
  pdl_start();
  const int64_t k = g.ne[0], total = k * g.ne[1];
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total) return;  // whole warps: total is a multiple of 32
  const int64_t r = t / k, i = t % k;
  const float v = silu(reinterpret_cast<const float*>(row_flat(g, r))[i]) *
                  reinterpret_cast<const float*>(row_flat(u, r))[i];
  reinterpret_cast<float*>(row_flat(d, r))[i] = v;
  quantize_block32(v, t / 32, q);
}

// out = silu(gate) · up, four values per thread, also in 16 bits (contiguous
// [rows][k]) for the prompt GEMM; rows of k % 4 == 0 values, 16-byte aligned.
// Grid y walks the rows: a flat index split into row and piece per thread
// (64-bit divisions) took 35.6 us for llama-8b's 512 rows of 14,336 (H200).
__global__ void swiglu_half_kernel(View g, View u, View d, uint16_t* half, bool bf16) {
  pdl_start();
  const int64_t k4 = g.ne[0] / 4;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= k4) return;
  for (int64_t r = blockIdx.y; r < g.ne[1]; r += gridDim.y) {
    const float4 a = reinterpret_cast<const float4*>(row_at(g, r, 0, 0))[i];
    const float4 b = reinterpret_cast<const float4*>(row_at(u, r, 0, 0))[i];
    const float4 v =
        make_float4(silu(a.x) * b.x, silu(a.y) * b.y, silu(a.z) * b.z, silu(a.w) * b.w);
    reinterpret_cast<float4*>(row_at(d, r, 0, 0))[i] = v;
    store_half4(half + 4 * (r * k4 + i), v, bf16);
  }
}

// Records the quantized copy of `out` (ncols columns of k) for the MUL_MAT.
ActQuantPtrs quantized_copy(const UnitContext& c, const View& out, int64_t k, int64_t ncols) {
  const ActQuantPtrs q = act_quant_at(c.scratch, k, ncols, c.quantize_residual);
  *c.act_cache = ActQuantCache{out.data, k, ncols, out.nb[1], c.quantize_residual, true};
  return q;
}

// Records the 16-bit copy of `out` (ncols columns of k) at the start of
// scratch for the GEMM (ops_mul_mat.cu's convert_act).
uint16_t* half_copy(const UnitContext& c, const View& out, int64_t k, int64_t ncols) {
  const ActForm form = c.half_bf16 ? ActForm::kBF16 : ActForm::kF16;
  *c.act_cache = ActQuantCache{out.data, k, ncols, out.nb[1], false, true, form};
  return reinterpret_cast<uint16_t*>(c.scratch);
}

}  // namespace

const char* launch_norm_mul(const UnitContext& c) {
  const bool add = c.count == 3;
  const NodeViews& nv = c.views[add ? 1 : 0];
  const NodeViews& mv = c.views[add ? 2 : 1];
  NormArgs p{};
  p.a = add ? c.views[0].src[0] : nv.src[0];
  if (add) {
    p.b = c.views[0].src[1];
    p.sum = c.views[0].dst;
  }
  p.norm = nv.dst;
  p.out = mv.dst;
  p.w = mv.src[1];
  p.eps = c.nodes[add ? 1 : 0].f[0];
  p.w_early = (c.constant_srcs[add ? 2 : 1] >> 1 & 1u) != 0;
  const int64_t k = p.a.ne[0], rows = p.a.ne[1] * p.a.ne[2] * p.a.ne[3];
  if (c.quantize_next) p.q = quantized_copy(c, p.out, k, rows);
  if (norm_split_fits(p, rows)) {
    launch_norm_split(p, rows, c.stream);
    return nullptr;
  }
  if (norm_rows_fits(p, k)) {
    if (c.half_next) {
      p.half = half_copy(c, p.out, k, rows);
      p.half_bf16 = c.half_bf16;
    }
    launch_norm_rows(p, rows, c.stream);
    return nullptr;
  }
  // Rows above kMaxPer x kThreads values need the larger block to stay in registers.
  const int threads = rows < kFewRows || k > kMaxPer * kThreads ? kThreadsFewRows : kThreads;
  launch_pdl(norm_mul_kernel, static_cast<unsigned>(rows < 65536 ? rows : 65536), threads, 0,
             c.stream, p);
  return nullptr;
}

const char* launch_swiglu_next(const UnitContext& c) {
  const NodeViews& v = c.views[0];
  const int64_t k = v.dst.ne[0], rows = v.dst.ne[1];
  if (c.half_next) {
    // Rows the four-value kernel cannot take: SWIGLU alone, the GEMM converts.
    if (k % 4 != 0 || !rows_aligned16(v.src[0]) || !rows_aligned16(v.src[1]) ||
        !rows_aligned16(v.dst))
      return kLaunchNodes;
    uint16_t* half = half_copy(c, v.dst, k, rows);
    const dim3 grid(static_cast<unsigned>((k / 4 + 255) / 256),
                    static_cast<unsigned>(rows < 65535 ? rows : 65535));
    launch_pdl(swiglu_half_kernel, grid, 256, 0, c.stream, v.src[0], v.src[1], v.dst, half,
               c.half_bf16);
    return nullptr;
  }
  const ActQuantPtrs q = quantized_copy(c, v.dst, k, rows);
  launch_pdl(swiglu_quant_kernel, static_cast<unsigned>((k * rows + 255) / 256), 256, 0, c.stream,
             v.src[0], v.src[1], v.dst, q);
  return nullptr;
}

}  // namespace polyinfer::cuda
