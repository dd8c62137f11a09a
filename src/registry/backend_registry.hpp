// Every backend polyinfer knows or finds, whether it works here, and why not.
//
//   BackendRegistry reg(RegistryOptions::from_environment());
//   for (const BackendEntry& b : reg.backends()) std::puts(b.status_line().c_str());
//
// Construction finds the plugins (plugin_search.hpp), probes each in a forked child
// (probe_isolated.hpp), loads into this process only those whose child probe succeeded, and
// asks the built-in CPU backend last. It never throws for a bad plugin: that is a status.
#pragma once
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "polyinfer/backend/abi.h"
#include "registry/plugin_status.hpp"

namespace polyinfer {

struct RegistryOptions {
  std::vector<std::string> search_path;  // directories, searched in order
  std::chrono::milliseconds probe_timeout{10000};
  std::vector<std::string> compiled;  // GPU backends this build compiled (report only)

  // search_path from POLYINFER_BACKEND_PATH and the running executable, probe_timeout from
  // POLYINFER_PROBE_TIMEOUT_MS (default 10 s), compiled from the build. Throws
  // Error(kInvalidArgument) when POLYINFER_PROBE_TIMEOUT_MS is not a positive integer.
  static RegistryOptions from_environment();
};

struct BackendEntry {
  std::string name;
  int rank = 0;             // 1-based place in the default priority order
  bool known = false;       // a name polyinfer knows; else a plugin found on the search path
  bool compiled = false;    // this build produced it (the CPU backend: always)
  bool built_in = false;    // the CPU backend, linked into polyinfer itself
  std::string plugin_path;  // the file found; "" when built in or not found
  PluginStatus status = PluginStatus::kNotFound;
  std::string reason;                         // one line, see plugin_status_line
  const pi_backend_vtable* vtable = nullptr;  // non-null iff usable; valid until exit
  std::vector<pi_device_info> devices;        // enumerated iff usable

  bool usable() const { return status == PluginStatus::kUsable; }
  std::string status_line() const { return plugin_status_line(status, reason); }
};

class BackendRegistry {
 public:
  explicit BackendRegistry(RegistryOptions options);

  // Default priority order: the known GPU backends (cuda, hip, vulkan, opencl, sycl, metal),
  // then plugins of other names found on the search path (by name), then cpu, always last.
  const std::vector<BackendEntry>& backends() const { return entries_; }
  const BackendEntry* find(std::string_view name) const;
  const RegistryOptions& options() const { return options_; }

 private:
  RegistryOptions options_;
  std::vector<BackendEntry> entries_;
};

}  // namespace polyinfer
