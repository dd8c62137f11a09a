// Which path a MUL_MAT node takes on the CUDA backend, for the launch
// (ops_mul_mat.cu, matvec.cu) and for fusion planning (fusion.cpp) alike.
#pragma once

#include <cstdint>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

// Columns per pass of the matrix-vector kernel: up to this many activation
// columns share one read of the weights. More columns take the GEMM.
constexpr int kMaxVecCols = 8;

// Matrices one matrix-vector launch covers at most (Q, K and V).
constexpr int kMaxGroupMats = 3;

// Longest F16 rows that take a folded RMS norm (fusion.hpp's kNormMatvec):
// matvec.cu's matvec_f16_rows with 128 threads per block, each holding 32 of
// the row's activations.
constexpr int64_t kMaxF16RowsK = 4096;

// Longest rows of quantized products that take a folded RMS norm (fusion.hpp's
// kNormMatvec): each block of matvec.cu's matvec_fast makes the row's 8-bit
// activations in its shared memory (4 KB of codes and 1 KB of scales).
constexpr int64_t kMaxNormFoldQK = 4096;

// Rows of a quantized product whose kernel also does the ADD, RMS_NORM and
// MUL after it (fusion.hpp's kMatvecNormQ): at most kMaxNormQRows (a counter
// per 32 rows), at least kMinNormQRows. The epilogue's atomic and loads cost
// about 5 us per product in place, against a norm kernel's 6.8 us on rows of
// 4,096 values (llama-8b) and 3.9 us on 2,048 (llama-1b): on the H200,
// llama-8b Q4_K_M tg128 gained 4% and Q4_0 was level, llama-1b Q4_K_M lost
// 3-8% (BENCHMARKS.md, session 23). Since session 25 shorter rows, and Q4_0
// products of up to kMaxNormFoldQK values after the norm, fold it into those
// products instead (kNormMatvec; fusion.cpp's norm_before_kquants).
constexpr int64_t kMaxNormQRows = 8192, kMinNormQRows = 4096;

// The matrix-vector fast path (matvec.cu): a warp per weight row staged
// through shared memory; unbatched, rows of whole 32-value blocks.
// `wne`/`ane`: the weight's and the activations' ne[4].
bool matvec_fast_path(uint32_t type, const int64_t* wne, const int64_t* ane);

// Whether one fast-path launch takes products of weight types a and b
// together: the same type, or Q4_K and Q6_K (matvec.cu's kKQuantMix, a warp's
// rows of one matrix and so of one type). llama.cpp's Q4_K_M files keep V in
// Q6_K in some layers (its use_more_bits), next to Q and K in Q4_K.
bool matvec_types_group(uint32_t a, uint32_t b);

// The node takes the matrix-vector path (not the GEMM).
bool takes_matvec(const pi_node& n);

// The node takes the fast path with activations quantized to 8-bit blocks of
// 32 (the quantized weight types; F16 dots float32 activations).
bool matvec_quantizes(const pi_node& n);

// ... with the residual codes as well (16-bit activations: Q8_0 weights).
bool matvec_residual(const pi_node& n);

}  // namespace polyinfer::cuda
