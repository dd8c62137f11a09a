// Telling when two backends' devices are the same physical GPU (CUDA, Vulkan and OpenCL all
// see an NVIDIA card), so that `auto` uses it once.
#pragma once
#include <cstdint>
#include <string>

#include "polyinfer/backend/abi.h"

namespace polyinfer {

// "pci:0000:65:00.0" from the PCI bus id, normalized: the domain as 4 hex digits (CUDA
// prints 8, "00000000:65:00.0"; Vulkan has none, "65:00.0"), lower case. Else, when the bus
// id is empty or unparsable, "uuid:<32 hex>" from a non-zero UUID. Else "" (unknown: such a
// device is never taken for another).
std::string physical_device_id(const pi_device_info& info);

// The 16 bytes as 32 lower-case hex digits; "" when all are zero (unknown).
std::string uuid_hex(const uint8_t (&uuid)[16]);

}  // namespace polyinfer
