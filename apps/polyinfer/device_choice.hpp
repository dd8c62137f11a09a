// Which device run and bench use: the registry's selection (--backend,
// --device, --priority, the environment and the config file; docs/BACKENDS.md),
// first choice. An explicit request that cannot be honoured is an error there,
// never a silent CPU run.
#pragma once
#include <cstdio>

#include "polyinfer/session.hpp"
#include "selection_options.hpp"

namespace polyinfer::cli {

// Fills params.backend/device_index/device_options; with `report`, prints the
// choice and the selection's reasons to it.
void choose_device(const SelectionFlags& flags, SessionParams& params, std::FILE* report);

}  // namespace polyinfer::cli
