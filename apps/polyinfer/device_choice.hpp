// Which devices run and bench use: the registry's selection (--backend,
// --device, --priority, the environment and the config file; docs/BACKENDS.md)
// and how layers are placed on them (-ngl, --split-mode, --tensor-split,
// --main-gpu). An explicit request that cannot be honoured is an error there,
// never a silent CPU run.
#pragma once
#include <cstdio>

#include "placement_options.hpp"
#include "polyinfer/session.hpp"
#include "selection_options.hpp"

namespace polyinfer::cli {

// Fills params.devices, cpu_options and placement; with `report`, prints the
// choice and the selection's reasons to it. Placement notices (ops sent back to
// the CPU) go to stderr as the session finds them.
void choose_device(const SelectionFlags& flags, const PlacementFlags& placement,
                   SessionParams& params, std::FILE* report);

}  // namespace polyinfer::cli
