// Turning VkResult failures and validation-layer errors into pi_status plus a
// message, so every vtable entry reports them the same way.
#pragma once
#include <vulkan/vulkan.h>

#include <stdexcept>
#include <string>

#include "polyinfer/backend/abi.h"

namespace polyinfer::vk {

// Thrown inside the plugin, caught at the vtable boundary (C++ never crosses the ABI).
struct VkError : std::runtime_error {
  VkError(pi_status s, const std::string& what) : std::runtime_error(what), status(s) {}
  pi_status status;
};

const char* result_name(VkResult r);

// Throws VkError(PI_ERR_DEVICE, or PI_ERR_OUT_OF_MEMORY for the two OOM codes).
void check(VkResult r, const char* what);

// Validation-layer errors seen since the last call (and clears them); "" if none.
// The debug messenger (vk_instance.cpp) appends to it.
std::string take_validation_errors();
void add_validation_error(const std::string& message);

}  // namespace polyinfer::vk
