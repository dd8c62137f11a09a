// MUL_MAT's memo of the converted activations in a stream's scratch.
#pragma once

#include <cstdint>

#include "backends/cuda/view.hpp"

namespace polyinfer::cuda {

// What the activations were converted to at the start of scratch.
enum class ActForm : uint8_t {
  kQ8,   // 8-bit blocks of 32 (act_quant.cuh), for the quantized matvec
  kF16,  // F16 values [ncols][k], for the prompt GEMM (ops_mul_mat.cu)
  kBF16,
  // Nothing in scratch: the activations are RMS_NORM(x) · nw, which a
  // kNormMatvec unit's quantized products made from x and nw in their own
  // shared memory; a later product over them (V of another type than Q and
  // K) does the same (FoldedNorm).
  kNormFold,
};

// Where a kNormFold cache's activations come from: RMS_NORM's input x and
// the MUL's weight nw (k float32 values each) and RMS_NORM's eps.
struct FoldedNorm {
  View x{}, nw{};
  float eps = 0.0f;
};

// A kMatvecNormQ unit's blocks (fusion.hpp) are codes of sum · nw before
// RMS_NORM's factor r = 1 / sqrt(Σ ssq / k + eps) (the codes of a 32-value
// block do not change when all its values are scaled): the products over
// them scale their sums by r, and the first of them writes the RMS_NORM and
// MUL outputs, norm = sum · r and out = norm · nw (k float32 values each).
struct PendingNorm {
  const float* ssq = nullptr;  // [k/32] Σ sum² per block; nullptr: no norm pending
  float eps = 0.0f;
  // The outputs still to write; nullptr once the first product has them.
  const float* sum = nullptr;
  const float* nw = nullptr;
  float* norm = nullptr;
  float* out = nullptr;
};

// The converted activations a MUL_MAT left in scratch (or, kNormFold, how
// to make them again), so that the next products over the same activations
// (Q, K, V; gate, up) skip the conversion. graph_submit's enqueue clears it
// at every node that is not a MUL_MAT (those may reuse scratch or rewrite the
// activations) and at every output over the activations (kNormFold: over the
// norm's input or weight too, which a refold reads).
struct ActQuantCache {
  const uint8_t* data = nullptr;  // the activation columns' first byte
  int64_t k = 0, ncols = 0, nb1 = 0;
  bool residual = false;  // the residual codes are there too (Q8_0)
  bool valid = false;
  ActForm form = ActForm::kQ8;
  size_t offset = 0;  // where the 8-bit blocks start in scratch (act_quant_at)
  PendingNorm norm;
  FoldedNorm fold;  // kNormFold

  // Scratch holds these activation columns in this form.
  bool holds(const uint8_t* d, int64_t k_, int64_t ncols_, int64_t nb1_, ActForm f) const {
    return valid && form == f && data == d && k == k_ && ncols == ncols_ && nb1 == nb1_;
  }
};

}  // namespace polyinfer::cuda
