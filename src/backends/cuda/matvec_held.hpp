// Decode products over long K-quant matrices with each lane's activations
// held in registers for the whole kernel (matvec_held.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/matvec_args.cuh"

namespace polyinfer::cuda {

// Values per row the kernel takes: 32 lanes × 128 (half a 256-value super-block each).
constexpr int64_t kHeldK = 4096;

// Fewest weight bytes (all matrices together) it takes: a 4,096 x 4,096
// Q4_K product (9.4 MB) was no quicker than on the fast path, a 28,672-row
// one (66 MB) a fifth quicker (BENCHMARKS.md, session 45).
constexpr int64_t kHeldMinBytes = int64_t{16} << 20;

// Launches the products of `p` where the kernel takes them: one activation
// column (p.ncols == 1) as 8-bit blocks (p.aq, p.ad, p.as, 16-byte aligned),
// possibly with a norm pending on them (p.pending), no epilogue (p.epi),
// weights Q4_K or Q6_K (`type`, a GGUF id) of at least kHeldMinBytes in
// all, every matrix kHeldK values wide with 16-byte aligned rows, and
// `sm_count` > 0 (the grid is one wave); returns false, with nothing
// launched, otherwise.
bool launch_matvec_held(uint32_t type, const FastArgs& p, cudaStream_t stream, int sm_count);

}  // namespace polyinfer::cuda
