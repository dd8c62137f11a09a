// What the CPU backend reports about the host: CPU name and vendor, memory.
#pragma once
#include <cstdint>
#include <string>

namespace polyinfer::cpu {

struct HostInfo {
  std::string cpu_name;  // /proc/cpuinfo "model name", or "CPU"
  std::string vendor;    // /proc/cpuinfo "vendor_id", or ""
  uint64_t memory_total = 0;
  uint64_t memory_available = 0;  // MemAvailable: what a new allocation can use
};

HostInfo read_host_info();

}  // namespace polyinfer::cpu
