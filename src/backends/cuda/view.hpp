// A pi_tensor resolved to a device address: what the host code hands to the
// kernels. Passed by value, so a launch needs no device-side descriptor and a
// captured CUDA graph holds the whole argument.
#pragma once

#include <cstdint>

namespace polyinfer::cuda {

struct View {
  uint8_t* data;  // element (0,0,0,0); nullptr for an absent optional source
  int64_t ne[4];
  int64_t nb[4];
};

}  // namespace polyinfer::cuda
