// GGUF metadata values as JSON, shared by `info`, `gen-model --dry-run` and the test tools.
#pragma once

#include <nlohmann/json.hpp>

#include "polyinfer/gguf_value.hpp"

namespace polyinfer::cli {

// A scalar or string value as a JSON string/bool/number (float32 widened exactly to
// double; 64-bit integers kept whole). Arrays give null: each caller decides how much
// of an array to show.
nlohmann::ordered_json scalar_json(const GgufValue& v);

}  // namespace polyinfer::cli
