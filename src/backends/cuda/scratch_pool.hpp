// Per-stream device scratch (dequantized weight tiles, 16-bit activations,
// flash-decoding partials). It only grows, to the largest need of a submitted
// graph; growing waits for the stream so that no queued kernel still uses the
// old allocation. Kernels of one stream run in order, so nodes share it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace polyinfer::cuda {

class ScratchPool {
 public:
  ScratchPool() = default;
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;
  ~ScratchPool();

  // At least `bytes` of scratch; returns cudaSuccess or the allocation error.
  // *moved is set when the address changed (captured graphs hold the old one).
  cudaError_t reserve(size_t bytes, cudaStream_t stream, bool* moved);
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace polyinfer::cuda
