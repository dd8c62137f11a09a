#include "device_choice.hpp"

#include "registry/backend_registry.hpp"
#include "registry/selection.hpp"

namespace polyinfer::cli {

void choose_device(const SelectionFlags& flags, SessionParams& params, std::FILE* report) {
  const SelectionRequest request = selection_request(command_line_layer(flags));
  const BackendRegistry registry(RegistryOptions::from_environment());
  const Selection sel = select_devices(registry, request);
  const SelectedDevice& d = sel.devices.front();
  params.backend = d.vtable;
  params.device_index = d.index;
  params.device_options = d.options;
  if (report == nullptr) return;
  std::fprintf(report, "device:   %s (%s)\n", d.text().c_str(), d.info.name);
  for (const std::string& why : sel.reasons) std::fprintf(report, "  %s\n", why.c_str());
}

}  // namespace polyinfer::cli
