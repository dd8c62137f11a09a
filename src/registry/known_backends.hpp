// The backends polyinfer knows by name, and which of them this build compiled.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polyinfer {

// Every backend name polyinfer knows, in the default priority order: cuda, hip, vulkan,
// opencl, sycl, metal, cpu. The CPU backend is built in and always last.
std::span<const std::string_view> known_backend_names();

bool is_known_backend(std::string_view name);

// The GPU backends this build compiled (CMake's POLYINFER_<NAME> switches), in default
// priority order; the CPU backend, always built in, is not listed.
std::vector<std::string> compiled_gpu_backends();

}  // namespace polyinfer
