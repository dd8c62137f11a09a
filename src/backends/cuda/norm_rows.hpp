// [ADD,] RMS_NORM[, MUL] of many rows (a prompt): one block of 256 threads
// per row, each thread 1-8 pieces of four values held in registers between
// the sum of squares and the writes, every load a 16-byte one issued before
// the first use. One block of 1,024 threads with a value per thread per pass
// took 26 us for llama-8b's 512 rows of 4,096 (H200, Nsight Compute), about
// 0.7 TB/s of what it moved.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/norm_split.hpp"

namespace polyinfer::cuda {

// Whether p's F32 rows of k values take the row kernel: RMS_NORM (no
// centring), no 8-bit copy, k a multiple of 4 up to 8,192, every row 16-byte
// aligned. launch_norm_rows writes p's outputs for `rows` rows (a block each)
// and, with p.half set, the F16/BF16 copy of p.out as [rows][k].
bool norm_rows_fits(const NormArgs& p, int64_t k);
void launch_norm_rows(const NormArgs& p, int64_t rows, cudaStream_t stream);

}  // namespace polyinfer::cuda
