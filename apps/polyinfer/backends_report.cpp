#include "backends_report.hpp"

#include <cstdio>

#include "registry/physical_id.hpp"

namespace polyinfer::cli {
namespace {

using Json = nlohmann::ordered_json;

Json uuid_json(const uint8_t (&uuid)[16]) {
  const std::string hex = uuid_hex(uuid);
  return hex.empty() ? Json(nullptr) : Json(hex);
}

Json device_json(int index, const pi_device_info& d) {
  return {{"index", index},
          {"name", d.name},
          {"vendor", d.vendor},
          {"kind", device_kind_name(d.kind)},
          {"memory_total", d.memory_total},
          {"memory_free", d.memory_free},
          {"driver_version", d.driver_version},
          {"compute_version", d.compute_version},
          {"bus_id", d.bus_id},
          {"uuid", uuid_json(d.uuid)},
          {"host_visible", d.host_visible != 0}};
}

Json backend_json(const BackendEntry& e, const Selection& sel) {
  Json devices = Json::array();
  for (int i = 0; i < static_cast<int>(e.devices.size()); ++i) {
    devices.push_back(device_json(i, e.devices[static_cast<size_t>(i)]));
  }
  const auto at = std::find(sel.priority.begin(), sel.priority.end(), e.name);
  return {
      {"name", e.name},
      {"rank", e.rank},
      {"priority", at == sel.priority.end() ? Json(nullptr) : Json(at - sel.priority.begin() + 1)},
      {"known", e.known},
      {"compiled", e.compiled},
      {"built_in", e.built_in},
      {"plugin", e.plugin_path.empty() ? Json(nullptr) : Json(e.plugin_path)},
      {"loaded", e.usable()},
      {"status", plugin_status_name(e.status)},
      {"reason", e.reason},
      {"status_line", e.status_line()},
      {"devices", devices}};
}

Json selection_json(const Selection& sel) {
  Json devices = Json::array();
  for (const SelectedDevice& d : sel.devices) {
    devices.push_back({{"device", d.text()},
                       {"backend", d.backend},
                       {"index", d.index},
                       {"name", d.info.name},
                       {"kind", device_kind_name(d.info.kind)},
                       {"options", d.options}});
  }
  return {{"priority", sel.priority}, {"devices", devices}, {"reasons", sel.reasons}};
}

}  // namespace

const char* device_kind_name(uint32_t kind) {
  switch (kind) {
    case PI_DEVICE_CPU:
      return "cpu";
    case PI_DEVICE_GPU:
      return "gpu";
    case PI_DEVICE_IGPU:
      return "igpu";
    default:
      return "other";
  }
}

Json backends_report(const BackendRegistry& registry, const Selection& selection) {
  Json backends = Json::array();
  for (const BackendEntry& e : registry.backends()) backends.push_back(backend_json(e, selection));
  return {{"abi_version", PI_ABI_VERSION},
          {"search_path", registry.options().search_path},
          {"probe_timeout_ms", registry.options().probe_timeout.count()},
          {"backends", backends},
          {"selection", selection_json(selection)}};
}

}  // namespace polyinfer::cli
