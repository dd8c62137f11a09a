// What the benchmarks that drive a backend through the ABI share: the
// backend's vtable, its opened device and a stream, a check that exits with
// the backend's message when a call fails (a benchmark has nothing to
// recover), and the median time of a submitted graph.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

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

  // Median seconds of one submit + sync of g over `reps` submits, after
  // `warmup` untimed ones (so a backend that records or captures graphs is
  // timed replaying them; launch overhead included, as a decode step sees it).
  double median_submit(const pi_graph& g, int warmup, int reps) const {
    std::vector<double> t;
    for (int i = 0; i < warmup + reps; ++i) {
      const auto a = std::chrono::steady_clock::now();
      check(vt->graph_submit(stream, &g), "graph_submit");
      check(vt->stream_sync(stream), "stream_sync");
      const auto b = std::chrono::steady_clock::now();
      if (i >= warmup) t.push_back(std::chrono::duration<double>(b - a).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

}  // namespace polyinfer::bench
