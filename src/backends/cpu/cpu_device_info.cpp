#include "backends/cpu/cpu_device_info.hpp"

#include <fstream>
#include <sstream>

namespace polyinfer::cpu {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// First value of "key : value" in a /proc file.
std::string proc_value(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key) {
      return trim(line.substr(colon + 1));
    }
  }
  return "";
}

uint64_t meminfo_bytes(const std::string& key) {
  std::istringstream in(proc_value("/proc/meminfo", key));
  uint64_t kib = 0;
  in >> kib;
  return kib * 1024;
}

}  // namespace

HostInfo read_host_info() {
  HostInfo h;
  h.cpu_name = proc_value("/proc/cpuinfo", "model name");
  if (h.cpu_name.empty()) h.cpu_name = "CPU";
  h.vendor = proc_value("/proc/cpuinfo", "vendor_id");
  h.memory_total = meminfo_bytes("MemTotal");
  h.memory_available = meminfo_bytes("MemAvailable");
  return h;
}

}  // namespace polyinfer::cpu
