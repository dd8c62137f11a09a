// Layout: a fixed header, then n_devices raw pi_device_info. Both ends are the same executable
// (the child is a fork), so the struct layouts agree by construction.
#include "registry/probe_wire.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace polyinfer {
namespace {

constexpr uint32_t kMagic = 0x50494250;  // "PIBP"

struct WireHeader {
  uint32_t magic;
  uint32_t status;  // PluginStatus
  uint32_t n_devices;
  char reason[512];
};

}  // namespace

std::string encode_probe(const PluginProbe& p) {
  WireHeader h{};
  h.magic = kMagic;
  h.status = static_cast<uint32_t>(p.status);
  h.n_devices = static_cast<uint32_t>(p.devices.size());
  std::snprintf(h.reason, sizeof h.reason, "%s", p.reason.c_str());
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
  bytes.append(reinterpret_cast<const char*>(p.devices.data()),
               p.devices.size() * sizeof(pi_device_info));
  return bytes;
}

std::optional<PluginProbe> decode_probe(const std::string& bytes) {
  WireHeader h;
  if (bytes.size() < sizeof h) return std::nullopt;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.magic != kMagic || h.status > static_cast<uint32_t>(PluginStatus::kBroken) ||
      h.n_devices > static_cast<uint32_t>(kMaxPluginDevices) ||
      bytes.size() != sizeof h + h.n_devices * sizeof(pi_device_info)) {
    return std::nullopt;
  }
  h.reason[sizeof h.reason - 1] = '\0';
  PluginProbe p;
  p.status = static_cast<PluginStatus>(h.status);
  p.reason = h.reason;
  p.devices.resize(h.n_devices);
  std::memcpy(p.devices.data(), bytes.data() + sizeof h, h.n_devices * sizeof(pi_device_info));
  return p;
}

}  // namespace polyinfer
