#include "registry/selection.hpp"

#include <algorithm>

#include "polyinfer/error.hpp"
#include "registry/auto_select.hpp"
#include "registry/string_list.hpp"

namespace polyinfer {
namespace {

std::vector<const SelectionLayer*> layers(const SelectionRequest& r) {
  return {&r.command_line, &r.environment, &r.config.choice};
}

// What an error offers instead: every device of every usable backend.
std::string available(const BackendRegistry& reg) {
  std::vector<std::string> devices;
  for (const BackendEntry& e : reg.backends()) {
    for (int i = 0; e.usable() && i < static_cast<int>(e.devices.size()); ++i) {
      devices.push_back(describe_device(e.name, i, e.devices[static_cast<size_t>(i)]));
    }
  }
  return "available: " + join(devices, ", ");
}

const BackendEntry& named_backend(const BackendRegistry& reg, const std::string& name,
                                  const std::string& label) {
  if (const BackendEntry* e = reg.find(name)) return *e;
  std::vector<std::string> names;
  for (const BackendEntry& e : reg.backends()) names.push_back(e.name);
  throw Error(ErrorCode::kInvalidArgument,
              label + ": no backend is named '" + name + "' (known: " + join(names, ", ") + ")");
}

const BackendEntry& usable_backend(const BackendRegistry& reg, const std::string& name,
                                   const std::string& label) {
  const BackendEntry& e = named_backend(reg, name, label);
  if (!e.usable()) {
    const std::string build =
        e.compiled || !e.known ? "" : " (not compiled into this build: see docs/BUILD_BACKENDS.md)";
    throw Error(ErrorCode::kUnsupported, label + ": " + name + " is not usable" + build + ": " +
                                             e.status_line() + "; " + available(reg));
  }
  if (e.devices.empty()) {
    throw Error(ErrorCode::kUnsupported,
                label + ": " + name + " reports no devices; " + available(reg));
  }
  return e;
}

// The named backends first, the others in default order; "cpu" ends the list.
std::vector<std::string> priority_order(const BackendRegistry& reg, const SelectionLayer* layer) {
  std::vector<std::string> order;
  if (layer != nullptr) {
    for (const std::string& name : *layer->priority) {
      named_backend(reg, name, layer->label("priority"));
      if (contains(order, name)) {
        throw Error(ErrorCode::kInvalidArgument,
                    layer->label("priority") + ": " + name + " is named twice");
      }
      order.push_back(name);
    }
  }
  for (const BackendEntry& e : reg.backends()) {
    if (!contains(order, e.name)) order.push_back(e.name);
  }
  order.erase(std::find(order.begin(), order.end(), "cpu") + 1, order.end());
  return order;
}

std::vector<SelectedDevice> explicit_devices(const BackendRegistry& reg, const SelectionLayer& l) {
  const std::string label = l.label("devices");
  std::vector<SelectedDevice> out;
  for (const DeviceRef& ref : *l.devices) {
    if (l.backend && *l.backend != "auto" && ref.backend != *l.backend) {
      throw Error(ErrorCode::kInvalidArgument, label + ": " + ref.text() + " is not a device of " +
                                                   l.label("backend") + " " + *l.backend);
    }
    const BackendEntry& e = usable_backend(reg, ref.backend, label + " " + ref.text());
    if (ref.index >= static_cast<int>(e.devices.size())) {
      throw Error(ErrorCode::kUnsupported,
                  label + " " + ref.text() + ": " + e.name + " has " +
                      std::to_string(e.devices.size()) + " device(s), 0.." +
                      std::to_string(e.devices.size() - 1) + "; " + available(reg));
    }
    for (const SelectedDevice& d : out) {
      if (d.text() == ref.text()) {
        throw Error(ErrorCode::kInvalidArgument, label + ": " + ref.text() + " is named twice");
      }
    }
    out.push_back(selected_device(e, ref.index));
  }
  return out;
}

std::vector<SelectedDevice> backend_devices(const BackendRegistry& reg, const SelectionLayer& l) {
  const BackendEntry& e = usable_backend(reg, *l.backend, l.label("backend"));
  std::vector<SelectedDevice> out;
  for (int i = 0; i < static_cast<int>(e.devices.size()); ++i) out.push_back(selected_device(e, i));
  return out;
}

void check_config_names(const BackendRegistry& reg, const ConfigFile& c) {
  for (const std::string& name : c.disabled) {
    named_backend(reg, name, c.path + ": disabled");
    if (name == "cpu") {
      throw Error(ErrorCode::kInvalidArgument,
                  c.path +
                      ": disabled: the CPU backend cannot be disabled (it runs what the "
                      "others cannot)");
    }
  }
  for (const auto& [name, options] : c.options) named_backend(reg, name, c.path + ": options");
}

// The most specific source that makes a choice: devices, or a backend ("auto" included: it
// overrides a less specific source's choice).
const SelectionLayer* choice_layer(const SelectionRequest& r) {
  for (const SelectionLayer* l : layers(r)) {
    if (l->devices || l->backend) return l;
  }
  return nullptr;
}

const SelectionLayer* priority_layer(const SelectionRequest& r) {
  for (const SelectionLayer* l : layers(r)) {
    if (l->priority) return l;
  }
  return nullptr;
}

// The CPU device goes last, named or not: it runs what the others cannot.
void put_cpu_last(const BackendRegistry& reg, Selection& sel) {
  const auto is_cpu = [](const SelectedDevice& d) { return d.backend == "cpu"; };
  const auto cpu = std::stable_partition(sel.devices.begin(), sel.devices.end(),
                                         [&](const SelectedDevice& d) { return !is_cpu(d); });
  if (cpu == sel.devices.end()) sel.devices.push_back(selected_device(*reg.find("cpu"), 0));
  if (sel.devices.size() == 1) {
    sel.reasons.push_back("no accelerator selected: the CPU runs it all");
  }
}

}  // namespace

std::string describe_device(const std::string& backend, int index, const pi_device_info& info) {
  return backend + ":" + std::to_string(index) + " (" + info.name + ")";
}

SelectedDevice selected_device(const BackendEntry& backend, int index) {
  return {backend.vtable, backend.name, index, backend.devices.at(static_cast<size_t>(index)), ""};
}

Selection select_devices(const BackendRegistry& registry, const SelectionRequest& request) {
  check_config_names(registry, request.config);
  Selection sel;
  const SelectionLayer* pl = priority_layer(request);
  sel.priority = priority_order(registry, pl);
  const SelectionLayer* cl = choice_layer(request);
  if (cl && cl->devices) {
    sel.reasons.push_back("devices from " + cl->label("devices"));
    sel.devices = explicit_devices(registry, *cl);
  } else if (cl && *cl->backend != "auto") {
    sel.reasons.push_back("backend " + *cl->backend + " from " + cl->label("backend"));
    sel.devices = backend_devices(registry, *cl);
  } else {
    sel.reasons.push_back("auto" + (cl ? " from " + cl->label("backend") : std::string()) +
                          ", priority " + join(sel.priority, ",") + " (" +
                          (pl ? "from " + pl->label("priority") : std::string("default")) + ")");
    sel.devices = auto_select(registry, sel.priority, request.config.disabled, request.config.path,
                              sel.reasons);
  }
  put_cpu_last(registry, sel);
  for (SelectedDevice& d : sel.devices) {
    const auto it = request.config.options.find(d.backend);
    if (it != request.config.options.end()) d.options = it->second;
  }
  return sel;
}

}  // namespace polyinfer
