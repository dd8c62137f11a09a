#include "registry/config_file.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

using Json = nlohmann::json;

Error config_error(const std::string& path, const std::string& what) {
  return Error(ErrorCode::kInvalidArgument, path + ": " + what);
}

std::vector<std::string> string_array(const Json& v, const std::string& path, const char* key) {
  if (!v.is_array())
    throw config_error(path, std::string("'") + key + "' must be an array of strings");
  std::vector<std::string> out;
  for (const Json& item : v) {
    if (!item.is_string()) {
      throw config_error(
          path, std::string("'") + key + "' must be an array of strings, not " + item.dump());
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::vector<std::string> backend_names(const Json& v, const std::string& path, const char* key) {
  std::vector<std::string> names;
  for (const std::string& s : string_array(v, path, key)) {
    names.push_back(normalize_backend_name(s, path + ": " + key));
  }
  return names;
}

std::map<std::string, std::string> options(const Json& v, const std::string& path) {
  if (!v.is_object()) throw config_error(path, "'options' must be an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : v.items()) {
    if (!value.is_string()) {
      throw config_error(path, "'options." + name + "' must be a string like \"threads=8\"");
    }
    out[normalize_backend_name(name, path + ": options")] = value.get<std::string>();
  }
  return out;
}

Json parse(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw config_error(path, "cannot read the file");
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    // Not only parse_error: a number beyond double's range is out_of_range
    // (found by fuzz_cli_parsers).
    throw config_error(path, e.what());
  }
}

void read_key(ConfigFile& c, const std::string& key, const Json& v) {
  const std::string& path = c.path;
  if (key == "backend") {
    if (!v.is_string()) throw config_error(path, "'backend' must be a string");
    c.choice.backend = normalize_backend_name(v.get<std::string>(), path + ": backend");
  } else if (key == "priority") {
    c.choice.priority = backend_names(v, path, "priority");
  } else if (key == "devices") {
    std::vector<DeviceRef> refs;
    for (const std::string& s : string_array(v, path, "devices")) {
      refs.push_back(parse_device_ref(s, path + ": devices"));
    }
    c.choice.devices = refs;
  } else if (key == "disabled") {
    c.disabled = backend_names(v, path, "disabled");
  } else if (key == "options") {
    c.options = options(v, path);
  } else {
    throw config_error(
        path, "unknown key '" + key + "' (known: backend, priority, devices, disabled, options)");
  }
}

}  // namespace

std::string default_config_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/polyinfer/config.json";
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.config/polyinfer/config.json" : "";
}

ConfigFile load_config(const std::string& path) {
  ConfigFile c;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return c;
  c.path = path;
  c.choice.config_path = path;
  const Json j = parse(path);
  if (!j.is_object()) throw config_error(path, "the top level must be a JSON object");
  for (const auto& [key, value] : j.items()) read_key(c, key, value);
  return c;
}

}  // namespace polyinfer
