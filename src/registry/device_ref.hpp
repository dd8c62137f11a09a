// Parsing the backend and device lists that selection requests are written in.
#pragma once
#include <string>
#include <vector>

namespace polyinfer {

// One device of one backend, as written "cuda:1".
struct DeviceRef {
  std::string backend;
  int index = 0;
  std::string text() const { return backend + ":" + std::to_string(index); }
  bool operator==(const DeviceRef&) const = default;
};

// "cuda:1,vulkan:0" (names lower-cased). `label` names where the text came from ("--device",
// "POLYINFER_DEVICES") in the error. Throws Error(kInvalidArgument) on an empty list or item,
// an item that is not NAME:INDEX, or an index that is not a non-negative integer.
std::vector<DeviceRef> parse_device_list(const std::string& text, const std::string& label);
DeviceRef parse_device_ref(const std::string& item, const std::string& label);

// "cuda,vulkan,cpu" (names lower-cased). Throws Error(kInvalidArgument) on an empty list or item.
std::vector<std::string> parse_name_list(const std::string& text, const std::string& label);

// A backend name as given, lower-cased; throws Error(kInvalidArgument) when empty.
std::string normalize_backend_name(const std::string& name, const std::string& label);

}  // namespace polyinfer
