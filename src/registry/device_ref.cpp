#include "registry/device_ref.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split_items(const std::string& text, const std::string& label) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item = trim(text.substr(start, comma - start));
    if (item.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  label + ": empty item in '" + text + "' (expected a comma-separated list)");
    }
    items.push_back(std::move(item));
    start = comma + 1;
  }
  return items;
}

}  // namespace

std::string normalize_backend_name(const std::string& name, const std::string& label) {
  std::string lower = trim(name);
  if (lower.empty()) throw Error(ErrorCode::kInvalidArgument, label + ": empty backend name");
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

DeviceRef parse_device_ref(const std::string& item, const std::string& label) {
  const size_t colon = item.rfind(':');
  const auto bad = [&] {
    return Error(ErrorCode::kInvalidArgument,
                 label + ": '" + item + "' is not NAME:INDEX (e.g. cuda:0)");
  };
  if (colon == std::string::npos || colon == 0) throw bad();
  const std::string index = trim(item.substr(colon + 1));
  DeviceRef ref;
  const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), ref.index);
  if (index.empty() || ec != std::errc() || end != index.data() + index.size() || ref.index < 0) {
    throw bad();
  }
  ref.backend = normalize_backend_name(item.substr(0, colon), label);
  return ref;
}

std::vector<DeviceRef> parse_device_list(const std::string& text, const std::string& label) {
  std::vector<DeviceRef> refs;
  for (const std::string& item : split_items(text, label)) {
    refs.push_back(parse_device_ref(item, label));
  }
  return refs;
}

std::vector<std::string> parse_name_list(const std::string& text, const std::string& label) {
  std::vector<std::string> names;
  for (const std::string& item : split_items(text, label)) {
    names.push_back(normalize_backend_name(item, label));
  }
  return names;
}

}  // namespace polyinfer
