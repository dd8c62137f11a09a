// The device-selection flags shared by the commands that choose devices: --backend NAME,
// --device NAME:INDEX[,...], --priority a,b,c (docs/BACKENDS.md).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "registry/selection_request.hpp"

namespace polyinfer::cli {

struct SelectionFlags {
  std::string backend;   // "" when not given
  std::string devices;   // "cuda:0,vulkan:1" or ""
  std::string priority;  // "vulkan,cuda" or ""
};

void add_selection_options(CLI::App& cmd, SelectionFlags& flags);

// The command-line layer of a SelectionRequest; a flag not given leaves its field unset.
// Throws Error(kInvalidArgument) on bad syntax.
SelectionLayer command_line_layer(const SelectionFlags& flags);

}  // namespace polyinfer::cli
