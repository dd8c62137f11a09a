// How the plugin reports a failure: the message goes to the device (the ABI's
// last_error) and the status to the caller.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "backends/cuda/cuda_device.hpp"

namespace polyinfer::cuda {

inline pi_status fail(pi_device dev, pi_status s, const std::string& what) {
  if (dev != nullptr) dev->error = what;
  return s;
}

// A failed CUDA call; clears CUDA's sticky last error.
inline pi_status cuda_fail(pi_device dev, const char* call, cudaError_t e) {
  cudaGetLastError();
  return fail(dev, e == cudaErrorMemoryAllocation ? PI_ERR_OUT_OF_MEMORY : PI_ERR_DEVICE,
              std::string("CUDA backend: ") + call + ": " + cudaGetErrorString(e));
}

}  // namespace polyinfer::cuda
