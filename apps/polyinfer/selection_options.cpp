#include "selection_options.hpp"

namespace polyinfer::cli {

void add_selection_options(CLI::App& cmd, SelectionFlags& flags) {
  cmd.add_option("--backend", flags.backend,
                 "Use every device of this backend (cuda, hip, vulkan, opencl, sycl, metal, cpu, "
                 "a plugin's name) or auto; overrides POLYINFER_BACKEND and the config file");
  cmd.add_option("--device", flags.devices,
                 "Use exactly these devices, NAME:INDEX[,...] (e.g. cuda:1); overrides "
                 "POLYINFER_DEVICES and the config file");
  cmd.add_option("--priority", flags.priority,
                 "Backend order for auto, e.g. vulkan,cuda (the rest follow in default order; "
                 "cpu ends the list); overrides POLYINFER_PRIORITY and the config file");
}

SelectionLayer command_line_layer(const SelectionFlags& flags) {
  SelectionLayer l;
  l.source = SelectionSource::kCommandLine;
  if (!flags.backend.empty()) l.backend = normalize_backend_name(flags.backend, l.label("backend"));
  if (!flags.devices.empty()) l.devices = parse_device_list(flags.devices, l.label("devices"));
  if (!flags.priority.empty()) l.priority = parse_name_list(flags.priority, l.label("priority"));
  return l;
}

}  // namespace polyinfer::cli
