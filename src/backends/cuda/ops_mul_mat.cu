// MUL_MAT: the decode path (few activation columns: matvec.cu, weights read
// in their stored format) or the prefill path: tensor-core GEMM through
// cuBLAS with float32 accumulation. For prefill, F16 and BF16 weights are
// used in place with activations rounded to the weight's format; quantized
// weights are dequantized to F16 in tiles of rows into scratch (the model
// keeps no dequantized copy); F32 weights run a float32 GEMM. The 16-bit
// activations stay at the start of scratch for the next product over the
// same activations (Q, K, V; gate, up: act_quant_cache.hpp).
#include <algorithm>

#include "backends/cuda/act_quant_cache.hpp"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/matvec.hpp"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quant_decode.cuh"

namespace polyinfer::cuda {
namespace {

// Weight rows dequantized per GEMM call: bounds scratch at kTileBytes.
constexpr size_t kTileBytes = size_t{64} << 20;
constexpr size_t kAlign = 256;

size_t align_up(size_t x) {
  return (x + kAlign - 1) / kAlign * kAlign;
}

bool is_plain(uint32_t t) {
  return t == kF32 || t == kF16 || t == kBF16;
}

// Rows per tile: a multiple of 256, so that each tile's GEMM keeps cuBLAS's
// aligned kernels (llama-8b's down projection in 2,340-row tiles took an
// sm80 kernel for 2-element alignment at 227 TFLOP/s, session 13).
int64_t tile_rows(const pi_tensor& w) {
  const int64_t per_row = w.ne[0] * 2;
  const int64_t rows =
      std::max<int64_t>(256, static_cast<int64_t>(kTileBytes) / per_row / 256 * 256);
  return std::min<int64_t>(rows, w.ne[1]);
}

// Activation columns converted to the GEMM's 16-bit format, contiguous [K, M]:
// four values per thread, grid y over the columns (K % 4 == 0, columns
// 16-byte aligned: act16_vec).
__global__ void act_to_16_vec(View a, int64_t b2, int64_t b3, bool bf16, uint16_t* out) {
  pdl_start();
  const int64_t k = a.ne[0];
  const int64_t i = 4 * (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
  if (i >= k) return;
  for (int64_t c = blockIdx.y; c < a.ne[1]; c += gridDim.y) {
    const float4 v = *reinterpret_cast<const float4*>(row_at(a, c, b2, b3) + 4 * i);
    store_half4(out + c * k + i, v, bf16);
  }
}

bool act16_vec(const View& a) {
  return a.ne[0] % 4 == 0 && rows_aligned16(a);
}

// Any layout: a thread per value.
__global__ void act_to_16(View a, int64_t b2, int64_t b3, bool bf16, uint16_t* out) {
  pdl_start();
  const int64_t k = a.ne[0], total = a.ne[0] * a.ne[1];
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = reinterpret_cast<const float*>(row_at(a, i / k, b2, b3))[i % k];
    out[i] = bf16 ? f32_to_bf16_bits(v) : __half_as_ushort(__float2half_rn(v));
  }
}

// Rows [n0, n0 + rows) of a quantized weight to F16, contiguous [K, rows].
__global__ void dequant_to_f16(View w, uint32_t type, int64_t n0, int64_t rows, int64_t wb2,
                               int64_t wb3, __half* out) {
  pdl_start();
  const int64_t chunks = w.ne[0] / 8, total = chunks * rows;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / chunks, ch = i % chunks;
    float v[8];
    decode8(type, row_at(w, n0 + r, wb2, wb3), ch, v);
    __half2* o = reinterpret_cast<__half2*>(out + r * w.ne[0] + 8 * ch);
    for (int e = 0; e < 4; ++e) o[e] = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
  }
}

bool supports_mul_mat(const pi_node& n) {
  const pi_tensor &w = n.src[0], &a = n.src[1], &d = n.dst;
  const TypeSize ts = type_size(w.type);
  if (ts.block == 0 || !is_f32_rows(a) || !is_f32_rows(d) || !rows_aligned(w)) return false;
  const int64_t k = w.ne[0];
  if (k <= 0 || k % ts.block != 0 || w.nb[0] != static_cast<uint64_t>(ts.bytes)) return false;
  if (a.ne[2] * a.ne[3] > 65535) return false;  // matvec grid y
  // The GEMM path reads F16/BF16 weights with leading dimension nb[1]/2.
  if ((w.type == kF16 || w.type == kBF16) && w.nb[1] % 2 != 0) return false;
  return a.ne[0] == k && d.ne[0] == w.ne[1] && d.ne[1] == a.ne[1] && d.ne[2] == a.ne[2] &&
         d.ne[3] == a.ne[3] && w.ne[2] > 0 && w.ne[3] > 0 && a.ne[2] % w.ne[2] == 0 &&
         a.ne[3] % w.ne[3] == 0;
}

bool use_gemm(const pi_node& n) {
  return !takes_matvec(n);
}

size_t mul_mat_scratch(const pi_node& n) {
  if (!use_gemm(n)) {
    return matvec_scratch(n.src[0].type, n.src[0].ne[0], n.src[1].ne[1],
                          n.src[1].ne[2] * n.src[1].ne[3], n.src[0].ne[1]);
  }
  const pi_tensor &w = n.src[0], &a = n.src[1];
  if (w.type == kF32) return 0;
  size_t bytes = align_up(static_cast<size_t>(a.ne[0] * a.ne[1]) * 2);
  if (!is_plain(w.type)) bytes += align_up(static_cast<size_t>(tile_rows(w) * w.ne[0]) * 2);
  return bytes;
}

const char* cublas_error(cublasStatus_t s) {
  return s == CUBLAS_STATUS_SUCCESS ? nullptr : "cuBLAS GEMM failed";
}

// The activations of batch (b2, b3) in the GEMM's 16-bit format at `act16`
// (the start of scratch), unless the last product or the unit before left
// them there (Q, K and V; gate and up read the same activations).
void convert_act(const View& va, int64_t b2, int64_t b3, bool bf16, uint16_t* act16,
                 ActQuantCache& cache, cudaStream_t stream) {
  const int64_t k = va.ne[0], m = va.ne[1];
  const ActForm form = bf16 ? ActForm::kBF16 : ActForm::kF16;
  const bool single = va.ne[2] * va.ne[3] == 1;
  if (single && cache.holds(va.data, k, m, va.nb[1], form)) return;
  if (act16_vec(va)) {
    const unsigned blocks = static_cast<unsigned>((k / 4 + 255) / 256);
    const dim3 grid(blocks, static_cast<unsigned>(m < 65535 ? m : 65535));
    launch_pdl(act_to_16_vec, grid, 256, 0, stream, va, b2, b3, bf16, act16);
  } else {
    launch_pdl(act_to_16, grid_for(k * m, 256), 256, 0, stream, va, b2, b3, bf16, act16);
  }
  cache = ActQuantCache{va.data, k, m, va.nb[1], false, single, form};
}

const char* launch_gemm(const LaunchContext& c) {
  const pi_node& n = c.node;
  const pi_tensor& w = n.src[0];
  const View &vw = c.src[0], &va = c.src[1], &vd = c.dst;
  const int64_t k = w.ne[0], big_n = w.ne[1], m = va.ne[1];
  const int64_t r2 = va.ne[2] / vw.ne[2], r3 = va.ne[3] / vw.ne[3];
  const float one = 1.0f, zero = 0.0f;
  const int ldd = static_cast<int>(vd.nb[1] / 4);
  const bool bf16 = w.type == kBF16;
  uint16_t* act16 = reinterpret_cast<uint16_t*>(c.scratch);
  __half* tile = reinterpret_cast<__half*>(c.scratch + align_up(static_cast<size_t>(k * m) * 2));
  const int64_t trows = tile_rows(w);
  for (int64_t b3 = 0; b3 < va.ne[3]; ++b3) {
    for (int64_t b2 = 0; b2 < va.ne[2]; ++b2) {
      const uint8_t* wbase = vw.data + (b2 / r2) * vw.nb[2] + (b3 / r3) * vw.nb[3];
      const uint8_t* abase = va.data + b2 * va.nb[2] + b3 * va.nb[3];
      uint8_t* dbase = vd.data + b2 * vd.nb[2] + b3 * vd.nb[3];
      cublasStatus_t st;
      if (w.type == kF32) {
        // Plain float32 (CUBLAS_COMPUTE_32F, no TF32): the F32 tolerance.
        st = cublasGemmEx(c.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(big_n),
                          static_cast<int>(m), static_cast<int>(k), &one, wbase, CUDA_R_32F,
                          static_cast<int>(vw.nb[1] / 4), abase, CUDA_R_32F,
                          static_cast<int>(va.nb[1] / 4), &zero, dbase, CUDA_R_32F, ldd,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (const char* e = cublas_error(st)) return e;
        continue;
      }
      convert_act(va, b2, b3, bf16, act16, *c.act_cache, c.stream);
      const cudaDataType_t wt = bf16 ? CUDA_R_16BF : CUDA_R_16F;
      if (is_plain(w.type)) {
        st = cublasGemmEx(c.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(big_n),
                          static_cast<int>(m), static_cast<int>(k), &one, wbase, wt,
                          static_cast<int>(vw.nb[1] / 2), act16, wt, static_cast<int>(k), &zero,
                          dbase, CUDA_R_32F, ldd, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (const char* e = cublas_error(st)) return e;
        continue;
      }
      for (int64_t n0 = 0; n0 < big_n; n0 += trows) {
        const int64_t rows = std::min(trows, big_n - n0);
        launch_pdl(dequant_to_f16, grid_for(rows * (k / 8), 256), 256, 0, c.stream, vw, w.type, n0,
                   rows, b2 / r2, b3 / r3, tile);
        st = cublasGemmEx(c.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows),
                          static_cast<int>(m), static_cast<int>(k), &one, tile, CUDA_R_16F,
                          static_cast<int>(k), act16, CUDA_R_16F, static_cast<int>(k), &zero,
                          dbase + n0 * 4, CUDA_R_32F, ldd, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (const char* e = cublas_error(st)) return e;
      }
    }
  }
  return nullptr;
}

const char* launch_mul_mat(const LaunchContext& c) {
  if (!use_gemm(c.node)) {
    launch_matvec_group(&c.src[0], &c.dst, 1, &c.node.src[0].type, c.src[1],
                        MatvecEnv{c.scratch, c.act_cache, c.stream, c.src0_constant, c.sm_count});
    return nullptr;
  }
  return launch_gemm(c);
}

}  // namespace

const OpImpl kOpMulMat{supports_mul_mat, mul_mat_scratch, launch_mul_mat};

const char* launch_gemm_pair(const UnitContext& c) {
  const View &w0 = c.views[0].src[0], &w1 = c.views[1].src[0], &va = c.views[0].src[1];
  const View &d0 = c.views[0].dst, &d1 = c.views[1].dst;
  // One stride from the first weight matrix and output to the second, in
  // elements (either pair may come first in memory, but in the same order).
  const bool swap = w1.data < w0.data;
  const View &wa = swap ? w1 : w0, &wb = swap ? w0 : w1, &da = swap ? d1 : d0, &db = swap ? d0 : d1;
  const int64_t w_gap = wb.data - wa.data, d_gap = db.data - da.data;
  if (d_gap <= 0 || w_gap % 2 != 0 || d_gap % 4 != 0) return kLaunchNodes;
  const bool bf16 = c.nodes[0].src[0].type == kBF16;
  const int64_t k = w0.ne[0], big_n = w0.ne[1], m = va.ne[1];
  uint16_t* act16 = reinterpret_cast<uint16_t*>(c.scratch);
  convert_act(va, 0, 0, bf16, act16, *c.act_cache, c.stream);
  const cudaDataType_t wt = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t st = cublasGemmStridedBatchedEx(
      c.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(big_n), static_cast<int>(m),
      static_cast<int>(k), &one, wa.data, wt, static_cast<int>(wa.nb[1] / 2), w_gap / 2, act16, wt,
      static_cast<int>(k), 0, &zero, da.data, CUDA_R_32F, static_cast<int>(da.nb[1] / 4), d_gap / 4,
      2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return cublas_error(st);
}

const char* launch_mul_mat_group(const UnitContext& c) {
  View w[kMaxGroupMats], d[kMaxGroupMats];
  uint32_t types[kMaxGroupMats];
  for (uint32_t m = 0; m < c.count; ++m) {
    w[m] = c.views[m].src[0];
    d[m] = c.views[m].dst;
    types[m] = c.nodes[m].src[0].type;
  }
  launch_matvec_group(w, d, static_cast<int>(c.count), types, c.views[0].src[1],
                      MatvecEnv{c.scratch, c.act_cache, c.stream, weights_constant(c), c.sm_count});
  return nullptr;
}

}  // namespace polyinfer::cuda
