#include "backends/cuda/scratch_pool.hpp"

namespace polyinfer::cuda {

ScratchPool::~ScratchPool() {
  if (data_ != nullptr) cudaFree(data_);
}

cudaError_t ScratchPool::reserve(size_t bytes, cudaStream_t stream, bool* moved) {
  *moved = false;
  if (bytes <= size_) return cudaSuccess;
  // Round up to a power of two (at least 1 MiB) so that a slowly growing need
  // reallocates a logarithmic number of times.
  size_t want = size_t{1} << 20;
  while (want < bytes) want <<= 1;
  if (data_ != nullptr) {
    if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess) return e;
    cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, want); e != cudaSuccess) return e;
  data_ = static_cast<uint8_t*>(p);
  size_ = want;
  *moved = true;
  return cudaSuccess;
}

}  // namespace polyinfer::cuda
