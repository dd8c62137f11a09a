// The `auto` policy: which devices of which usable backends, in priority order, and which
// one physical GPU seen through several backends is used through.
#pragma once
#include <string>
#include <vector>

#include "registry/backend_registry.hpp"
#include "registry/selection.hpp"

namespace polyinfer {

// The accelerators `auto` picks (the CPU device is not among them), appending to `reasons`
// one line per backend or device passed over. `order` is the priority order, ending in "cpu";
// backends in `disabled` are passed over.
std::vector<SelectedDevice> auto_select(const BackendRegistry& registry,
                                        const std::vector<std::string>& order,
                                        const std::vector<std::string>& disabled,
                                        const std::string& disabled_by,
                                        std::vector<std::string>& reasons);

}  // namespace polyinfer
