#include "device_choice.hpp"

#include "registry/backend_registry.hpp"
#include "registry/selection.hpp"

namespace polyinfer::cli {

void choose_device(const SelectionFlags& flags, const PlacementFlags& placement,
                   SessionParams& params, std::FILE* report) {
  params.placement = placement_params(placement);
  const SelectionRequest request = selection_request(command_line_layer(flags));
  const BackendRegistry registry(RegistryOptions::from_environment());
  const Selection sel = select_devices(registry, request);
  params.devices.clear();
  for (const SelectedDevice& d : sel.devices) {
    if (d.backend == "cpu") {
      params.cpu_options = d.options;
    } else {
      params.devices.push_back({d.vtable, d.index, d.options});
    }
  }
  params.notice = [](const std::string& line) { std::fprintf(stderr, "note: %s\n", line.c_str()); };
  if (params.devices.empty() && placement.n_gpu_layers != "auto" && placement.n_gpu_layers != "0") {
    std::fprintf(stderr, "note: -ngl %s has no effect: no accelerator is selected\n",
                 placement.n_gpu_layers.c_str());
  }
  if (report == nullptr) return;
  for (const SelectedDevice& d : sel.devices) {
    std::fprintf(report, "device:   %s (%s)\n", d.text().c_str(), d.info.name);
  }
  for (const std::string& why : sel.reasons) std::fprintf(report, "  %s\n", why.c_str());
}

}  // namespace polyinfer::cli
