// The decode path of MUL_MAT: matrix-vector products over weights in their
// stored format (no dequantized copy), for a few activation columns.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "backends/cuda/act_quant_cache.hpp"
#include "backends/cuda/cuda_common.cuh"

namespace polyinfer::cuda {

// Columns per pass of the matrix-vector kernel: up to this many activation
// columns share one read of the weights.
constexpr int kMaxVecCols = 8;

// Scratch bytes launch_matvec needs for a weight of `type` with rows of k
// values, ncols activation columns and `batches` activation batches (the
// quantized activations of the fast path); 0 when it needs none.
size_t matvec_scratch(uint32_t type, int64_t k, int64_t ncols, int64_t batches);

// dst[n, m, b2, b3] = Σ_k W[k, n, b2/r2, b3/r3] · A[k, m, b2, b3] for every m
// (in passes of kMaxVecCols columns). `scratch` holds matvec_scratch() bytes;
// `cache` (may be null) says whether it already holds these activations.
void launch_matvec(const View& w, uint32_t type, const View& a, const View& d, uint8_t* scratch,
                   ActQuantCache* cache, cudaStream_t stream);

}  // namespace polyinfer::cuda
