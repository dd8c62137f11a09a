// Option values shared by the commands that open a model (run, bench).
#pragma once
#include <string>

#include "polyinfer/dtype.hpp"

namespace polyinfer::cli {

// "f32" | "f16" | "q8_0" (any case); throws Error(kInvalidArgument) otherwise.
GgmlType parse_cache_type(const std::string& name);

}  // namespace polyinfer::cli
