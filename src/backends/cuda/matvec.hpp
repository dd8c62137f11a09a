// The decode path of MUL_MAT: matrix-vector products over weights in their
// stored format (no dequantized copy), for a few activation columns.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "backends/cuda/act_quant.cuh"
#include "backends/cuda/act_quant_cache.hpp"
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/matvec_path.hpp"

namespace polyinfer::cuda {

// Scratch bytes a matrix-vector product needs for a weight of `type` with
// `rows` rows of k values, ncols activation columns and `batches` activation
// batches (the quantized activations of the fast path, and a kMatvecNormQ
// product's blocks of its output); 0 when it needs none.
size_t matvec_scratch(uint32_t type, int64_t k, int64_t ncols, int64_t batches, int64_t rows);

// Where the quantized activations of k x ncols values sit in scratch; the
// residual codes only when `residual` (Q8_0 weights, matvec_residual()).
ActQuantPtrs act_quant_at(uint8_t* scratch, int64_t k, int64_t ncols, bool residual);

// Activation columns c < ncols of `a` (k = a.ne[0] values each, k % 32 == 0,
// column c at a.data + c * a.nb[1]) to the 8-bit blocks at q.
void launch_quantize_act(const View& a, int ncols, const ActQuantPtrs& q, cudaStream_t stream);

// Where a matrix-vector product runs: `scratch` holds matvec_scratch()
// bytes; `cache` (may be null) says whether it already holds these
// activations, quantized.
struct MatvecEnv {
  uint8_t* scratch;
  ActQuantCache* cache;
  cudaStream_t stream;
  // No node of any submit writes the weights (pi_buffer_s::kernel_written):
  // the fast path may read them before waiting for the kernel before it
  // (pdl.cuh), which may still be running.
  bool weights_early;
  // The device's multiprocessors (0: unknown), for grids of one wave.
  int sm_count = 0;
};

// A node next to decode products that their kernel does too (fusion.hpp's
// kMatvecAdd, kNormMatvec). Every view is one contiguous float32 vector.
enum MatvecFoldKind : int { kFoldNone = 0, kFoldAdd = 1, kFoldNorm = 2 };
struct MatvecFold {
  int kind = kFoldNone;
  // kFoldAdd (one product d of rows values): sum = d + res, the residual ADD.
  View res, sum;
  // kFoldNorm: the products' activations are out = norm · nw with norm =
  // x / sqrt(mean(x²) + eps) (RMS_NORM, then MUL; x the products' `a`);
  // both are written too.
  View nw, norm, out;
  float eps = 0.0f;
};

// The n products of one activation column a with `f` folded in, weights w[m]
// of types[m] (GGUF ids), all of one type or Q4_K and Q6_K together (one
// launch, a warp's rows of one matrix): F16 when the direct kernel takes them
// (rows, a and f's vectors 16-byte aligned); quantized on the fast path
// (Q4_0, Q4_K, Q5_K, Q6_K; Q8_0 only under kFoldAdd), kFoldNorm with a and f's
// vectors 16-byte aligned and at most kMaxNormFoldQK values, the activations
// made in each block's shared memory; false when it does not, and then
// nothing is launched.
bool launch_matvec_fold(const View* w, const View* d, int n, const uint32_t* types, const View& a,
                        const MatvecFold& f, const MatvecEnv& env);

// The ADD, RMS_NORM and MUL after a quantized decode product, done by the
// product's kernel (fusion.hpp's kMatvecNormQ): sum = d + res, and the
// 8-bit blocks of sum · nw for the products after them, with Σ sum² per
// block, so that no norm kernel runs between the products; the cache then
// holds those blocks with the norm pending (PendingNorm), and the first
// product over them writes norm and out. Every view is one contiguous
// float32 vector of the product's rows (a multiple of 128, at most
// kMaxNormQRows). `counts`: kMaxNormQRows / 32 zeroed counters, zero again
// when the kernel ends.
struct MatvecNormQ {
  View res, sum, nw, norm, out;
  float eps = 0.0f;
  unsigned* counts = nullptr;
};

// d[n] = Σ_k w[k, n] · a[k] for one activation column a [k] (float32) and
// quantized weights w [k, rows] of `type` (Q4_0, Q4_K, Q5_K, Q6_K, Q8_0; rows a
// multiple of 128, at most kMaxNormQRows), d [rows] float32, then e's nodes;
// false, with nothing launched, when the fast path does not take it or the
// activation cache holds blocks away from the start of scratch.
bool launch_matvec_norm_q(const View& w, const View& d, uint32_t type, const View& a,
                          const MatvecNormQ& e, const MatvecEnv& env);

// For each of the n (<= kMaxGroupMats) weights w[m] of types[m] (GGUF ids)
// and one K: d[m][i, j, b2, b3] = Σ_k w[m][k, i, b2/r2, b3/r3] · a[k, j, b2,
// b3] for every column j (in passes of kMaxVecCols columns), with the fast
// path's matrices in one launch where they are of one type or Q4_K and Q6_K
// (matvec_types_group), else one launch each.
void launch_matvec_group(const View* w, const View* d, int n, const uint32_t* types, const View& a,
                         MatvecEnv env);

}  // namespace polyinfer::cuda
