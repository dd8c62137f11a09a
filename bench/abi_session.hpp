// What the benchmarks that drive a backend through the ABI share: the
// backend's vtable, its opened device and a stream, and a check that exits
// with the backend's message when a call fails (a benchmark has nothing to
// recover).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "polyinfer/backend/abi.h"

namespace polyinfer::bench {

struct AbiSession {
  const pi_backend_vtable* vt = nullptr;
  pi_device dev = nullptr;
  pi_stream stream = nullptr;

  // Exits 2 with "<what> failed: <status> <last_error>" unless s is PI_OK.
  void check(pi_status s, const char* what) const {
    if (s == PI_OK) return;
    std::fprintf(stderr, "%s failed: %d %s\n", what, s, dev ? vt->last_error(dev) : "");
    std::exit(2);
  }
};

}  // namespace polyinfer::bench
