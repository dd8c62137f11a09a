// CUDA graphs for repeated submits. A submitted graph is described twice: its
// topology (ops, types, node count) and its full signature (every shape,
// stride, buffer, offset and parameter). A submit whose full signature
// matches a cached executable graph replays it. A signature seen for the
// second time is captured; the executable of a cached graph with the same
// topology is updated in place (cudaGraphExecUpdate), else a new one is
// instantiated. A signature seen for the first time runs eagerly: a decode
// step's signature changes every token (n_kv, the KV write offset), and
// capturing it would put about 1 ms of host work (capture + update of ~400
// launches, measured on the H200) in front of every token, while eager
// launches overlap with the kernels they queue.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <list>
#include <vector>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

struct GraphKeys {
  std::vector<uint64_t> topology;
  std::vector<uint64_t> full;
};

GraphKeys graph_keys(const pi_graph& g);

class GraphCache {
 public:
  enum class Action { kReplay, kCapture, kEager };

  GraphCache() = default;
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  ~GraphCache();

  // What to do with a submit of these keys; on kReplay *exec is the graph.
  Action lookup(const GraphKeys& keys, cudaGraphExec_t* exec);
  // After a capture: updates or instantiates the executable for keys.
  // Returns the executable to launch, or nullptr with the error in *err.
  cudaGraphExec_t install(const GraphKeys& keys, cudaGraph_t graph, cudaError_t* err);
  // Forgets every executable (scratch moved: they hold its old address).
  void clear();

  int replays() const { return replays_; }
  int updates() const { return updates_; }

 private:
  struct Entry {
    GraphKeys keys;
    cudaGraphExec_t exec = nullptr;
  };
  static constexpr size_t kMaxEntries = 16;
  std::list<Entry> entries_;               // most recently used first
  std::list<std::vector<uint64_t>> seen_;  // full signatures seen once
  int replays_ = 0, updates_ = 0;
};

}  // namespace polyinfer::cuda
