// What `polyinfer backends --json` prints: every backend polyinfer knows or found, its plugin,
// status and devices, and the devices the current request selects. docs/BACKENDS.md has the
// schema; the text form of the command prints the same fields.
#pragma once
#include <nlohmann/json.hpp>

#include "registry/backend_registry.hpp"
#include "registry/selection.hpp"

namespace polyinfer::cli {

nlohmann::ordered_json backends_report(const BackendRegistry& registry, const Selection& selection);

// "cpu", "gpu", "igpu", "other".
const char* device_kind_name(uint32_t kind);

}  // namespace polyinfer::cli
