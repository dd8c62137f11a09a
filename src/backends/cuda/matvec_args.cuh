// The arguments of a decode matrix-vector launch over a group of matrices
// that share one activation vector (matvec.cu's fast path, matvec_held.cu).
#pragma once

#include <cstdint>

#include "backends/cuda/act_quant_cache.hpp"
#include "backends/cuda/matvec_path.hpp"
#include "backends/cuda/norm_q.cuh"
#include "backends/cuda/view.hpp"

namespace polyinfer::cuda {

struct FastArgs {
  // Matrix m's rows are the flat rows [m ? row_end[m - 1] : 0, row_end[m]).
  View w[kMaxGroupMats], d[kMaxGroupMats];
  int64_t row_end[kMaxGroupMats];
  int nmat;
  // kKQuantMix: bit m set where matrix m's weights are Q6_K (else Q4_K).
  unsigned q6k_mats;
  int ncols;
  // Quantized types: activations as 8-bit blocks of 32: codes and residual
  // codes [ncols][K], scales and scale * Σ codes [ncols][K/32].
  int8_t* aq;
  int8_t* alo;
  float* ad;
  float* as;
  View a;      // F16: the float32 activations
  bool act16;  // F16: every activation row starts 16-byte aligned
  // No kernel writes the weights (MatvecEnv::weights_early): their first
  // loads may be issued before the kernel waits for the one before it.
  bool early;
  // One column over a kMatvecNormQ unit's blocks: the sums times the norm's
  // factor (ssq == nullptr: none), the first product's writes (norm_outputs).
  PendingNorm pending;
  // A kMatvecNormQ product (one matrix, one column): norm_epilogue.
  NormEpilogue epi;
};

// The group's matrix that flat row `row` is in. Searched from the last
// matrix down: the held kernel then takes 72 registers, not 76, and llama-8b
// Q4_K_M tg128 482 tok/s, not 476 (H200, session 46); the fast path's
// kernels keep their counts.
__device__ __forceinline__ int matrix_of(const FastArgs& p, int64_t row) {
  int m = p.nmat - 1;
  while (m > 0 && row < p.row_end[m - 1]) --m;
  return m;
}

// Flat row `row`'s index within matrix m (matrix_of).
__device__ __forceinline__ int64_t row_in_matrix(const FastArgs& p, int m, int64_t row) {
  return row - (m == 0 ? 0 : p.row_end[m - 1]);
}

}  // namespace polyinfer::cuda
