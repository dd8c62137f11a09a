// RMS_NORM and NORM of a few rows (decode) spread over many blocks per row,
// optionally fused with the residual ADD before and the weight MUL after, and
// with the 8-bit copy of the output for a quantized matrix-vector product
// (act_quant.cuh). One block of 1,024 threads per 4,096-value row took 7.5-9 us
// on the H200, issue-bound on one multiprocessor; here every block re-reads
// the whole row from L2 for the sum of squares (a few KB) and writes only its
// slice of 256 values.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/act_quant.cuh"

namespace polyinfer::cuda {

// A row normalization with its optional fused neighbours.
struct NormArgs {
  View a, b;  // the input, or with b.data set the sum a + b (ADD's sources)
  View sum;   // a + b, written when b.data is set (ADD's dst)
  View norm;  // the normalized rows (RMS_NORM's or NORM's dst)
  View out;   // norm · w (MUL's dst), written when out.data is set
  View w;     // MUL's weight row
  float eps;
  bool center;     // NORM: subtract the row's mean first
  ActQuantPtrs q;  // q.aq set: out also as 8-bit blocks (rows of a multiple of 32)
  // Set: out also as F16 (BF16 with half_bf16) values, contiguous [rows][k],
  // for the prompt GEMM that reads it (norm_rows.hpp).
  uint16_t* half;
  bool half_bf16;
  // No kernel writes w's buffer (pi_buffer_s::kernel_written): the split
  // kernel reads it before its PDL wait (pdl.cuh).
  bool w_early;
};

// Whether `rows` rows of p take the split kernel: few rows of at most 8,192
// values, and no output over an input (another block may still read it).
bool norm_split_fits(const NormArgs& p, int64_t rows);
void launch_norm_split(const NormArgs& p, int64_t rows, cudaStream_t stream);

}  // namespace polyinfer::cuda
