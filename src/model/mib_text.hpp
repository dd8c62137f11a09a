// Bytes as "12.34 MiB", for the placement and memory reports.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace polyinfer {

inline std::string mib_text(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace polyinfer
