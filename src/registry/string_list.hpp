// Small helpers for the lists of names the registry reports and checks.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace polyinfer {

inline std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

inline bool contains(const std::vector<std::string>& items, std::string_view s) {
  return std::find(items.begin(), items.end(), s) != items.end();
}

}  // namespace polyinfer
