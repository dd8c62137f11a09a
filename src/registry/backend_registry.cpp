#include "registry/backend_registry.hpp"

#include <algorithm>
#include <cstdlib>

#include "backends/cpu/cpu_backend.hpp"
#include "polyinfer/error.hpp"
#include "registry/known_backends.hpp"
#include "registry/plugin_inspect.hpp"
#include "registry/plugin_search.hpp"
#include "registry/probe_isolated.hpp"
#include "registry/stdout_guard.hpp"
#include "registry/string_list.hpp"

namespace polyinfer {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::chrono::milliseconds timeout_from_env() {
  const std::string text = env_or_empty("POLYINFER_PROBE_TIMEOUT_MS");
  if (text.empty()) return std::chrono::milliseconds(10000);
  char* end = nullptr;
  const long long ms = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || ms <= 0) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "POLYINFER_PROBE_TIMEOUT_MS must be a positive number of milliseconds, not '" + text + "'");
  }
  return std::chrono::milliseconds(ms);
}

BackendEntry plugin_entry(const std::string& name, bool known, const RegistryOptions& o) {
  BackendEntry e;
  e.name = name;
  e.known = known;
  e.compiled = contains(o.compiled, name);
  e.reason = "(searched: " + join(o.search_path, ", ") + ")";
  return e;
}

// Known GPU backends in default order, then the other plugins found; no paths yet.
std::vector<BackendEntry> gpu_entries(const std::vector<PluginCandidate>& found,
                                      const RegistryOptions& o) {
  std::vector<BackendEntry> entries;
  for (std::string_view name : known_backend_names()) {
    if (name != "cpu") entries.push_back(plugin_entry(std::string(name), true, o));
  }
  std::vector<std::string> others;
  for (const PluginCandidate& c : found) {
    // The CPU backend is built in; a file claiming its name is not loaded.
    if (!is_known_backend(c.name)) others.push_back(c.name);
  }
  std::sort(others.begin(), others.end());
  for (const std::string& name : others) entries.push_back(plugin_entry(name, false, o));
  for (BackendEntry& e : entries) {
    for (const PluginCandidate& c : found) {
      if (c.name == e.name) e.plugin_path = c.path;
    }
  }
  return entries;
}

void apply(BackendEntry& e, PluginProbe p) {
  e.status = p.status;
  e.reason = std::move(p.reason);
  e.vtable = p.vtable;
  e.devices = std::move(p.devices);
}

// Probes every found plugin in children, then loads here those the children found usable.
void probe_plugins(std::vector<BackendEntry>& entries, std::chrono::milliseconds timeout) {
  std::vector<BackendEntry*> present;
  std::vector<PluginCandidate> candidates;
  for (BackendEntry& e : entries) {
    if (e.plugin_path.empty()) continue;
    present.push_back(&e);
    candidates.push_back({e.name, e.plugin_path});
  }
  std::vector<PluginProbe> results = probe_isolated(candidates, timeout);
  const StdoutToStderr quiet;
  for (size_t i = 0; i < present.size(); ++i) {
    BackendEntry& e = *present[i];
    apply(e, results[i].status == PluginStatus::kUsable ? inspect_plugin(e.plugin_path, e.name)
                                                        : std::move(results[i]));
  }
}

BackendEntry cpu_entry() {
  BackendEntry e;
  e.name = "cpu";
  e.known = e.compiled = e.built_in = true;
  apply(e, inspect_vtable(*polyinfer_cpu_backend_entry(), "cpu"));
  return e;
}

}  // namespace

RegistryOptions RegistryOptions::from_environment() {
  RegistryOptions o;
  o.search_path = plugin_search_path(env_or_empty("POLYINFER_BACKEND_PATH"), current_executable());
  o.probe_timeout = timeout_from_env();
  o.compiled = compiled_gpu_backends();
  return o;
}

BackendRegistry::BackendRegistry(RegistryOptions options) : options_(std::move(options)) {
  entries_ = gpu_entries(find_plugins(options_.search_path), options_);
  probe_plugins(entries_, options_.probe_timeout);
  entries_.push_back(cpu_entry());
  for (size_t i = 0; i < entries_.size(); ++i) entries_[i].rank = static_cast<int>(i) + 1;
}

const BackendEntry* BackendRegistry::find(std::string_view name) const {
  for (const BackendEntry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace polyinfer
