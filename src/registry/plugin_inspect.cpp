#include "registry/plugin_inspect.hpp"

#include <dlfcn.h>

#include <algorithm>

namespace polyinfer {
namespace {

PluginProbe failed(PluginStatus status, std::string reason) {
  PluginProbe p;
  p.status = status;
  p.reason = std::move(reason);
  return p;
}

// A plugin's own text may be NULL or hold anything; the status line must stay one line.
std::string one_line(const char* text) {
  std::string s = text ? text : "";
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

template <size_t N>
void terminate(char (&s)[N]) {
  s[N - 1] = '\0';
}

// Fixed-size strings from a plugin are not trusted to be terminated.
void terminate_strings(pi_device_info& info) {
  terminate(info.name);
  terminate(info.vendor);
  terminate(info.driver_version);
  terminate(info.compute_version);
  terminate(info.bus_id);
}

PluginProbe enumerate_devices(const pi_backend_vtable& vt) {
  const int count = vt.device_count();
  if (count < 0) {
    return failed(PluginStatus::kUnusable, "device_count() returned " + std::to_string(count));
  }
  PluginProbe p;
  p.status = PluginStatus::kUsable;
  p.vtable = &vt;
  for (int i = 0; i < std::min(count, kMaxPluginDevices); ++i) {
    pi_device_info info{};
    if (vt.device_info(i, &info) != PI_OK) {
      return failed(PluginStatus::kUnusable, "device_info(" + std::to_string(i) +
                                                 ") failed: " + one_line(vt.last_error(nullptr)));
    }
    terminate_strings(info);
    p.devices.push_back(info);
  }
  return p;
}

}  // namespace

PluginProbe inspect_vtable(const pi_backend_vtable& vt, const std::string& name) {
  if (vt.abi_version != PI_ABI_VERSION) {
    return failed(PluginStatus::kAbiMismatch, "(plugin v" + std::to_string(vt.abi_version) +
                                                  ", host v" + std::to_string(PI_ABI_VERSION) +
                                                  ")");
  }
  if (vt.name == nullptr || name != vt.name) {
    return failed(PluginStatus::kUnusable, "the plugin calls itself '" +
                                               std::string(vt.name ? vt.name : "") + "', not '" +
                                               name + "'");
  }
  char reason[512] = "";
  if (vt.probe(reason, sizeof reason) != 1) {
    reason[sizeof reason - 1] = '\0';
    return failed(PluginStatus::kUnusable,
                  reason[0] ? one_line(reason) : "the probe gave no reason");
  }
  return enumerate_devices(vt);
}

PluginProbe inspect_plugin(const std::string& path, const std::string& name) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return failed(PluginStatus::kCannotLoad, one_line(dlerror()));
  auto* entry = reinterpret_cast<pi_backend_entry_fn>(dlsym(lib, PI_ENTRY_SYMBOL));
  if (entry == nullptr) {
    return failed(PluginStatus::kMissingSymbol, PI_ENTRY_SYMBOL " not exported by " + path);
  }
  const pi_backend_vtable* vt = entry();
  if (vt == nullptr)
    return failed(PluginStatus::kMissingSymbol, PI_ENTRY_SYMBOL "() returned NULL");
  return inspect_vtable(*vt, name);
}

}  // namespace polyinfer
