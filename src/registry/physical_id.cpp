#include "registry/physical_id.hpp"

#include <cstdio>

namespace polyinfer {
namespace {

// "[domain:]bus:device.function", hex fields; "" when it is not that.
std::string normalized_bus_id(const char* bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  const bool with_domain =
      std::sscanf(bus_id, "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) == 4;
  if (!with_domain) {
    domain = 0;
    if (std::sscanf(bus_id, "%x:%x.%x%c", &bus, &device, &function, &tail) != 3) return "";
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "pci:%04x:%02x:%02x.%x", domain, bus, device, function);
  return buf;
}

}  // namespace

std::string uuid_hex(const uint8_t (&uuid)[16]) {
  std::string hex;
  bool nonzero = false;
  for (uint8_t b : uuid) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
    nonzero = nonzero || b != 0;
  }
  return nonzero ? hex : "";
}

std::string physical_device_id(const pi_device_info& info) {
  const std::string pci = info.bus_id[0] ? normalized_bus_id(info.bus_id) : "";
  const std::string uuid = uuid_hex(info.uuid);
  return !pci.empty() ? pci : uuid.empty() ? "" : "uuid:" + uuid;
}

}  // namespace polyinfer
