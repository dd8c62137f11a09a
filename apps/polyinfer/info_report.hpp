// The facts `polyinfer info` reports about a GGUF file, as JSON (the --json output
// and the source the text output is printed from).
#pragma once

#include <nlohmann/json.hpp>

#include "polyinfer/gguf.hpp"

namespace polyinfer::cli {

struct InfoOptions {
  bool tensors = false;   // list every tensor
  bool metadata = false;  // list every metadata key
};

nlohmann::ordered_json info_report(const GgufFile& file, const InfoOptions& opts);

}  // namespace polyinfer::cli
