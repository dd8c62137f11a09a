// What became of one backend plugin when the registry looked for it and probed it.
#pragma once
#include <string>

namespace polyinfer {

enum class PluginStatus {
  kUsable,         // loaded, probe said yes, devices enumerated
  kNotFound,       // no libpolyinfer-<name>.so on the search path
  kCannotLoad,     // dlopen() failed (reason: the dlerror text)
  kMissingSymbol,  // no polyinfer_backend_entry, or it returned NULL
  kAbiMismatch,    // vtable->abi_version != PI_ABI_VERSION
  kUnusable,       // the probe said no (reason: the plugin's own)
  kBroken,         // the probe crashed, hung, or died without answering
};

// "usable", "not found", "cannot load", "missing symbol", "ABI mismatch", "unusable", "broken".
const char* plugin_status_name(PluginStatus s);

// The one-line status `polyinfer backends` prints: the name, then ": reason" when there is one,
// e.g. "unusable: no NVIDIA driver (libcuda.so.1: cannot open shared object file)".
std::string plugin_status_line(PluginStatus s, const std::string& reason);

}  // namespace polyinfer
