#include "registry/selection_request.hpp"

#include <cstdlib>

#include "registry/config_file.hpp"

namespace polyinfer {
namespace {

std::string env_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string SelectionLayer::label(std::string_view field) const {
  switch (source) {
    case SelectionSource::kCommandLine:
      return field == "devices" ? "--device" : "--" + std::string(field);
    case SelectionSource::kEnvironment:
      return field == "backend"    ? "POLYINFER_BACKEND"
             : field == "priority" ? "POLYINFER_PRIORITY"
                                   : "POLYINFER_DEVICES";
    case SelectionSource::kConfigFile:
      return config_path + ": " + std::string(field);
  }
  return std::string(field);
}

SelectionLayer selection_from_environment() {
  SelectionLayer env;
  env.source = SelectionSource::kEnvironment;
  if (const std::string v = env_value("POLYINFER_BACKEND"); !v.empty()) {
    env.backend = normalize_backend_name(v, env.label("backend"));
  }
  if (const std::string v = env_value("POLYINFER_PRIORITY"); !v.empty()) {
    env.priority = parse_name_list(v, env.label("priority"));
  }
  if (const std::string v = env_value("POLYINFER_DEVICES"); !v.empty()) {
    env.devices = parse_device_list(v, env.label("devices"));
  }
  return env;
}

SelectionRequest selection_request(SelectionLayer command_line) {
  SelectionRequest r;
  r.command_line = std::move(command_line);
  r.command_line.source = SelectionSource::kCommandLine;
  r.environment = selection_from_environment();
  r.config = load_config(default_config_path());
  return r;
}

}  // namespace polyinfer
