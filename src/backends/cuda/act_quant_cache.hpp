// MUL_MAT's memo of the quantized activations in a stream's scratch.
#pragma once

#include <cstdint>

namespace polyinfer::cuda {

// The 8-bit activations a fast quantized matvec left in scratch, so that the
// next products over the same activations (Q, K, V; gate, up) skip the
// quantize kernel. graph_submit's enqueue clears it at every node that is
// not a MUL_MAT (those may reuse scratch or rewrite the activations).
struct ActQuantCache {
  const uint8_t* data = nullptr;  // the activation columns' first byte
  int64_t k = 0, ncols = 0, nb1 = 0;
  bool residual = false;  // the residual codes are there too (Q8_0)
  bool valid = false;
};

}  // namespace polyinfer::cuda
