// Driver and device discovery for the CUDA plugin's vtable.
#pragma once

#include <cstddef>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

int probe(char* reason, size_t reason_len);
int device_count();
pi_status device_info(int index, pi_device_info* out);

}  // namespace polyinfer::cuda
