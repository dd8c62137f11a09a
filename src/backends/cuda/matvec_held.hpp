// Decode products over long K-quant matrices with each lane's activations
// held in registers for the whole kernel (matvec_held.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/act_quant_cache.hpp"
#include "backends/cuda/matvec_path.hpp"
#include "backends/cuda/view.hpp"

namespace polyinfer::cuda {

// Values per row the kernel takes: 32 lanes × 128 (half a 256-value super-block each).
constexpr int64_t kHeldK = 4096;

// Fewest weight bytes (all matrices together) it takes: a 4,096 x 4,096
// Q4_K product (9.4 MB) was no quicker than on the fast path, a 28,672-row
// one (66 MB) a fifth quicker (BENCHMARKS.md, session 45).
constexpr int64_t kHeldMinBytes = int64_t{16} << 20;

// One activation column over up to kMaxGroupMats matrices of one type.
struct HeldArgs {
  // Matrix m's rows are the flat rows [m ? row_end[m - 1] : 0, row_end[m]);
  // d[m] is its float32 output vector.
  View w[kMaxGroupMats], d[kMaxGroupMats];
  int64_t row_end[kMaxGroupMats];
  int nmat;
  // The activations as 8-bit blocks of 32 (act_quant.cuh): codes [k], scale
  // d and d · Σ codes per block [k / 32], all 16-byte aligned.
  const int8_t* aq;
  const float* ad;
  const float* as;
  // A norm still pending on the blocks (nullptr ssq: none).
  PendingNorm pending;
  // No kernel writes the weights: their first copies may start before the
  // kernel waits for the one before it (pdl.cuh).
  bool early;
};

// Launches the products where the kernel takes them: weights Q4_K or Q6_K
// (`type`, a GGUF id) of at least kHeldMinBytes in all, every matrix kHeldK
// values wide with 16-byte aligned rows, and `sm_count` > 0 (the grid is one
// wave); returns false, with nothing launched, otherwise.
bool launch_matvec_held(uint32_t type, const HeldArgs& p, cudaStream_t stream, int sm_count);

}  // namespace polyinfer::cuda
