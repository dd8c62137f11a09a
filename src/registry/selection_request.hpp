// What the user asks for, from each of the places a choice can come from. Most specific wins:
// the command line (or API), then the environment, then the config file, then the defaults.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "registry/device_ref.hpp"

namespace polyinfer {

enum class SelectionSource { kCommandLine, kEnvironment, kConfigFile };

// One source's request; a field left unset defers to the next source.
struct SelectionLayer {
  SelectionSource source = SelectionSource::kCommandLine;
  std::string config_path;                           // the file, for kConfigFile
  std::optional<std::string> backend;                // a backend name, or "auto"
  std::optional<std::vector<std::string>> priority;  // backend names, most preferred first
  std::optional<std::vector<DeviceRef>> devices;     // exactly these devices

  // How errors name a field of this source: "--device", "POLYINFER_DEVICES",
  // "/home/u/.config/polyinfer/config.json: devices". field: "backend", "priority", "devices".
  std::string label(std::string_view field) const;
};

// The config file's whole content: a layer, plus what only the file can say.
struct ConfigFile {
  std::string path;  // "" when no file was read
  SelectionLayer choice{SelectionSource::kConfigFile, "", {}, {}, {}};
  std::vector<std::string> disabled;           // backends `auto` never picks
  std::map<std::string, std::string> options;  // backend → device_open options, "key=v;key=v"
};

struct SelectionRequest {
  SelectionLayer command_line{SelectionSource::kCommandLine, "", {}, {}, {}};
  SelectionLayer environment{SelectionSource::kEnvironment, "", {}, {}, {}};
  ConfigFile config;
};

// POLYINFER_BACKEND, POLYINFER_PRIORITY (comma list), POLYINFER_DEVICES (NAME:INDEX list);
// unset or empty variables leave their field unset. Throws Error(kInvalidArgument) on bad syntax.
SelectionLayer selection_from_environment();

// The given command-line layer, the environment, and the config file at default_config_path().
// Throws what selection_from_environment and load_config throw.
SelectionRequest selection_request(SelectionLayer command_line);

}  // namespace polyinfer
