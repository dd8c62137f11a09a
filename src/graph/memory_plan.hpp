// Where each input and intermediate tensor of a graph lives in one arena
// buffer: a tensor's bytes are reused once its last reader has run (first fit
// over a coalescing free list), so a forward pass needs a few activations'
// worth of memory rather than one slot per node.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/graph.hpp"

namespace polyinfer {

struct MemoryPlan {
  std::vector<uint64_t> offset;  // per tensor id: arena offset of owners (inputs, intermediates)
  uint64_t arena_bytes = 0;
};

inline constexpr uint64_t kArenaAlign = 64;

MemoryPlan plan_memory(const Graph& graph);

}  // namespace polyinfer
