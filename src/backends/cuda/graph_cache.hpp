// CUDA graphs for repeated submits, found by the graph's topology and full
// signature (graph_keys.hpp).
//
// - A full signature that matches a cached executable replays it: a decode
//   step at the next position does (decode_fields.hpp).
// - One that differs from a cached executable of the same topology in a few
//   nodes (the attention past 256 positions, whose grid grows every 32, or a
//   Q8_0 KV cache's writes, which the ROPE+KV unit does not take) is patched: only those nodes are
//   captured again, and their kernels' parameters (arguments, grid) are set in the executable
//   (cudaGraphExecKernelNodeSetParams). A full capture and update of ~400
//   launches cost about 1 ms of host time per token on the H200.
// - A signature seen for the second time, a topology seen for the second
//   time with no executable yet, or a topology whose previous submit also ran
//   eagerly (its executable is stale: the buffers moved, say, after the
//   arena grew) is captured in full and instantiated.
// - Anything else runs eagerly: one-off graphs would pay for capture and
//   instantiation without a replay.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <list>
#include <vector>

#include "backends/cuda/graph_keys.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

// The kernel nodes each graph node's launches became in a capture, in launch
// order; empty for a node that cannot be patched (it launched no kernel, or
// something that is not a kernel).
using NodeKernels = std::vector<std::vector<cudaGraphNode_t>>;

class GraphCache {
 public:
  enum class Action { kReplay, kPatch, kCapture, kEager };
  struct Lookup {
    Action action = Action::kEager;
    cudaGraphExec_t exec = nullptr;  // kReplay, kPatch
    std::vector<uint32_t> changed;   // kPatch: the nodes to capture again
  };

  GraphCache() = default;
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  ~GraphCache();

  // `leaders`: each node's fused unit, by its first node (fusion.hpp); a
  // changed node is captured again with its whole unit, under the leader.
  Lookup lookup(const GraphKeys& keys, const std::vector<uint32_t>& leaders);
  // After a full capture: instantiates the executable for keys and keeps the
  // graph and its kernel nodes (under each unit's leader). Returns it, or
  // nullptr with the error in *err.
  cudaGraphExec_t install(const GraphKeys& keys, const std::vector<uint32_t>& leaders,
                          cudaGraph_t graph, NodeKernels kernels, cudaError_t* err);
  // After capturing the nodes lookup() named: sets their kernels' parameters
  // in the executable. False when they do not pair up with the cached kernels
  // (then the executable is dropped and the caller captures in full).
  bool patch(const GraphKeys& keys, const std::vector<uint32_t>& changed, const NodeKernels& fresh);
  // Forgets every executable (scratch moved: they hold its old address).
  void clear();

 private:
  struct Entry {
    GraphKeys keys;
    std::vector<uint32_t> leaders;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    NodeKernels kernels;
  };
  static constexpr size_t kMaxEntries = 16;
  // A patch recaptures at most this share of the nodes; more is a new graph.
  static constexpr size_t kMaxPatchShare = 4;
  static void destroy(Entry& e);
  bool patchable(const Entry& e, const GraphKeys& keys, const std::vector<uint32_t>& leaders,
                 std::vector<uint32_t>* changed) const;
  std::list<Entry> entries_;                     // most recently used first
  std::list<std::vector<uint64_t>> seen_;        // full signatures seen once
  std::list<std::vector<uint64_t>> topologies_;  // topologies seen
  std::vector<uint64_t> last_eager_;             // topology of the last eager submit
};

}  // namespace polyinfer::cuda
