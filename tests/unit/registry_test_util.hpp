// Registries over the test plugins of tests/plugins (built into POLYINFER_TEST_PLUGIN_DIR).
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "registry/backend_registry.hpp"

namespace polyinfer::test {

// <plugin dir>/<name>; fails the test loudly when the plugins were not built.
inline std::string plugin_dir(const std::string& name) {
  const std::string dir = std::string(POLYINFER_TEST_PLUGIN_DIR) + "/" + name;
  if (!std::filesystem::is_directory(dir)) {
    ADD_FAILURE() << "test plugin directory missing: " << dir
                  << " (build the polyinfer_test_plugins target)";
  }
  return dir;
}

// Probes short enough to keep the hanging plugin's test quick; long enough for a loaded CI.
inline constexpr std::chrono::milliseconds kTestProbeTimeout{500};

inline RegistryOptions options_for(std::vector<std::string> dirs,
                                   std::vector<std::string> compiled = {}) {
  RegistryOptions o;
  o.search_path = std::move(dirs);
  o.probe_timeout = kTestProbeTimeout;
  o.compiled = std::move(compiled);
  return o;
}

}  // namespace polyinfer::test
