// Loading one backend plugin and asking it what it can do, in the calling process.
#pragma once
#include <string>
#include <vector>

#include "polyinfer/backend/abi.h"
#include "registry/plugin_status.hpp"

namespace polyinfer {

// The most devices the registry takes from one backend (more are ignored).
inline constexpr int kMaxPluginDevices = 64;

struct PluginProbe {
  PluginStatus status = PluginStatus::kBroken;
  std::string reason;                         // one line; empty when usable
  const pi_backend_vtable* vtable = nullptr;  // set when usable
  std::vector<pi_device_info> devices;        // set when usable
};

// dlopen()s `path`, looks up polyinfer_backend_entry, then runs inspect_vtable. The library is
// never unloaded: GPU runtimes do not unload cleanly, and a usable vtable must outlive every
// device opened through it. This runs plugin code in the calling process: the registry calls
// it in a forked child first (probe_isolated) and in its own process only after that succeeded.
PluginProbe inspect_plugin(const std::string& path, const std::string& name);

// Checks the ABI version and the backend name, runs the probe, enumerates the devices.
PluginProbe inspect_vtable(const pi_backend_vtable& vt, const std::string& name);

}  // namespace polyinfer
