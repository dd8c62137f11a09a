// The user's config file: $XDG_CONFIG_HOME/polyinfer/config.json. Example:
//
//   {
//     "backend": "vulkan",                  // or "auto"
//     "priority": ["vulkan", "cuda"],       // most preferred first
//     "devices": ["cuda:1"],                // exactly these devices
//     "disabled": ["opencl"],               // never picked by auto
//     "options": {"cpu": "threads=8"}       // passed to device_open
//   }
//
// (JSON has no comments; they are here for the reader.) Every key is optional.
#pragma once
#include <string>

#include "registry/selection_request.hpp"

namespace polyinfer {

// $XDG_CONFIG_HOME/polyinfer/config.json when XDG_CONFIG_HOME is set and not empty, else
// $HOME/.config/polyinfer/config.json; "" when HOME is not set either.
std::string default_config_path();

// The file's content; an empty ConfigFile (path "") when `path` is "" or does not exist.
// Throws Error(kInvalidArgument) "<path>: <what>" when it cannot be read, is not valid JSON
// (with the parser's message), has a key other than those above, or a value of the wrong type.
ConfigFile load_config(const std::string& path);

}  // namespace polyinfer
