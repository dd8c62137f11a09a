// What `run` prints to stderr: load progress (terminals only), the device and
// memory report of --verbose, and the load/prompt/generation statistics.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>

#include "polyinfer/generate.hpp"
#include "polyinfer/session.hpp"

namespace polyinfer::cli {

class Timer {
 public:
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// "\rloading model  42%" on stderr, cleared when done.
std::function<void(uint64_t, uint64_t)> load_progress_printer();
void print_session_report(const Session& s, std::FILE* out);
// Weights (mapped), KV cache and the compute arena, after a run has sized it.
void print_memory_report(const Session& s, std::FILE* out);
void print_run_stats(double load_ms, const GenerationStats& st, std::FILE* out);

}  // namespace polyinfer::cli
