// Where a CUDA stream's time goes, for tuning (POLYINFER_CUDA_PROFILE):
//   =1     every node runs eagerly between two CUDA events; per op (and, for
//          MUL_MAT and FLASH_ATTN, per weight type and shape) the count and
//          the GPU time are summed;
//   =host  graphs stay on; only the host time of each submit is summed, by
//          what the graph cache did (replay, capture + update, eager), and
//          by step of the submit (checks, planning, signature, launch).
// Both print a table to stderr when the stream is destroyed.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

enum class ProfileMode { kOff, kKernels, kHost };

ProfileMode profile_mode_from_env();

class Profiler {
 public:
  Profiler() = default;
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  ~Profiler();

  // Kernel mode: events around one node's launches, or a fused unit's
  // (`unit` names its kind; n is its first node).
  void begin_node(cudaStream_t s, const pi_node& n, const char* unit = nullptr);
  void end_node(cudaStream_t s);
  // After the stream is synchronized: folds the recorded pairs into the sums.
  void collect();
  // Host mode: the host time of one submit, under the cache's action.
  void add_submit(const char* action, double ms);
  // Host mode: the host time of one step of a submit.
  void add_step(const char* step, double ms);
  // The table; empty when nothing was recorded.
  std::string report() const;

 private:
  struct Pending {
    std::string key;
    cudaEvent_t start, stop;
  };
  struct Sum {
    long count = 0;
    double ms = 0;
  };
  cudaEvent_t take_event();
  std::vector<Pending> pending_;
  std::vector<cudaEvent_t> free_;
  std::map<std::string, Sum> kernels_, submits_, steps_;
};

}  // namespace polyinfer::cuda
