#include "registry/auto_select.hpp"

#include <algorithm>
#include <map>

#include "registry/physical_id.hpp"

namespace polyinfer {
namespace {

// Whether a backend that auto passes over deserves a reason line: one the user built or
// installed does; one neither compiled nor present is noise.
bool worth_a_reason(const BackendEntry& e) {
  return e.compiled || !e.plugin_path.empty();
}

// Adds the usable devices of one backend, skipping GPUs already taken through a backend
// earlier in the order; `taken` maps a physical id to the device that took it.
void add_backend(const BackendEntry& e, std::map<std::string, std::string>& taken,
                 std::vector<SelectedDevice>& out, std::vector<std::string>& reasons) {
  for (int i = 0; i < static_cast<int>(e.devices.size()); ++i) {
    const pi_device_info& info = e.devices[static_cast<size_t>(i)];
    const std::string what = describe_device(e.name, i, info);
    if (info.kind == PI_DEVICE_CPU) {
      reasons.push_back(what + " passed over: a CPU device (the cpu backend runs the host)");
      continue;
    }
    const std::string id = physical_device_id(info);
    if (!id.empty()) {
      const auto [it, fresh] = taken.emplace(id, e.name + ":" + std::to_string(i));
      if (!fresh) {
        reasons.push_back(what + " passed over: the same GPU as " + it->second + " (" + id + ")");
        continue;
      }
    }
    out.push_back(selected_device(e, i));
  }
}

// Integrated and other devices only help when no discrete GPU is there.
void drop_lesser_devices(std::vector<SelectedDevice>& picked, std::vector<std::string>& reasons) {
  const bool discrete = std::any_of(picked.begin(), picked.end(), [](const SelectedDevice& d) {
    return d.info.kind == PI_DEVICE_GPU;
  });
  if (!discrete) return;
  std::erase_if(picked, [&](const SelectedDevice& d) {
    if (d.info.kind == PI_DEVICE_GPU) return false;
    reasons.push_back(describe_device(d.backend, d.index, d.info) +
                      " passed over: not a discrete GPU, and a discrete GPU is selected");
    return true;
  });
}

}  // namespace

std::vector<SelectedDevice> auto_select(const BackendRegistry& registry,
                                        const std::vector<std::string>& order,
                                        const std::vector<std::string>& disabled,
                                        const std::string& disabled_by,
                                        std::vector<std::string>& reasons) {
  std::vector<SelectedDevice> picked;
  std::map<std::string, std::string> taken;
  for (const std::string& name : order) {
    if (name == "cpu") break;
    const BackendEntry& e = *registry.find(name);
    if (std::find(disabled.begin(), disabled.end(), name) != disabled.end()) {
      reasons.push_back(name + ": disabled by " + disabled_by);
    } else if (!e.usable()) {
      if (worth_a_reason(e)) reasons.push_back(name + ": " + e.status_line());
    } else if (e.devices.empty()) {
      reasons.push_back(name + ": usable but reports no devices");
    } else {
      add_backend(e, taken, picked, reasons);
    }
  }
  drop_lesser_devices(picked, reasons);
  return picked;
}

}  // namespace polyinfer
