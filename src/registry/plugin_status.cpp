#include "registry/plugin_status.hpp"

namespace polyinfer {

const char* plugin_status_name(PluginStatus s) {
  switch (s) {
    case PluginStatus::kUsable:
      return "usable";
    case PluginStatus::kNotFound:
      return "not found";
    case PluginStatus::kCannotLoad:
      return "cannot load";
    case PluginStatus::kMissingSymbol:
      return "missing symbol";
    case PluginStatus::kAbiMismatch:
      return "ABI mismatch";
    case PluginStatus::kUnusable:
      return "unusable";
    case PluginStatus::kBroken:
      return "broken";
  }
  return "unknown";
}

std::string plugin_status_line(PluginStatus s, const std::string& reason) {
  std::string line = plugin_status_name(s);
  // A reason in parentheses qualifies the status ("not found (searched: ...)", "ABI mismatch
  // (plugin v2, host v1)"); any other reason follows a colon.
  if (!reason.empty()) line += (reason.front() == '(' ? " " : ": ") + reason;
  return line;
}

}  // namespace polyinfer
