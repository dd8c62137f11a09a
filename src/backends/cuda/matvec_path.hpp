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

// The matrix-vector fast path (matvec.cu): a warp per weight row staged
// through shared memory; unbatched, rows of whole 32-value blocks.
// `wne`/`ane`: the weight's and the activations' ne[4].
bool matvec_fast_path(uint32_t type, const int64_t* wne, const int64_t* ane);

// The node takes the matrix-vector path (not the GEMM).
bool takes_matvec(const pi_node& n);

// The node takes the fast path with activations quantized to 8-bit blocks of
// 32 (the quantized weight types; F16 dots float32 activations).
bool matvec_quantizes(const pi_node& n);

// ... with the residual codes as well (16-bit activations: Q8_0 weights).
bool matvec_residual(const pi_node& n);

}  // namespace polyinfer::cuda
