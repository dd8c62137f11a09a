// The layer-placement flags shared by run and bench, as llama.cpp spells them:
// -ngl N|all|auto, --split-mode none|layer, --tensor-split r0,r1,..., --main-gpu I
// (docs/BACKENDS.md, "Placement").
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "polyinfer/session.hpp"

namespace polyinfer::cli {

struct PlacementFlags {
  std::string n_gpu_layers = "auto";
  std::string split_mode = "layer";
  std::string tensor_split;  // "" when not given
  int main_gpu = 0;
};

void add_placement_options(CLI::App& cmd, PlacementFlags& flags);

// Throws Error(kInvalidArgument) naming the flag for a value it cannot take.
PlacementParams placement_params(const PlacementFlags& flags);

}  // namespace polyinfer::cli
