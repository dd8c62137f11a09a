// Where each input and intermediate tensor of a graph lives in its device's
// arena buffer (one arena per device, by GraphTensor::device of the owner): an
// intermediate's bytes are reused once its last reader has run (first fit over
// a coalescing free list), so a forward pass needs a few activations' worth of
// memory rather than one slot per node; inputs follow the intermediates. Bytes come free
// kFuseWindow - 1 nodes after their last reader: a backend may run up to kFuseWindow consecutive
// nodes as one kernel (the CUDA backend's fused units), whose thread blocks would otherwise write a
// later node's output over an input that another block of the same kernel still reads.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/graph.hpp"

namespace polyinfer {

struct MemoryPlan {
  std::vector<uint64_t> offset;  // per tensor id: arena offset of owners (inputs, intermediates)
  std::vector<uint64_t> arena_bytes;  // per device: at least kArenaAlign
};

inline constexpr uint64_t kArenaAlign = 64;
// Inputs (token ids, positions, the attention mask) lie after the
// intermediates, each slot a multiple of this: a decode step's addresses stay
// the same while the mask grows (1,024 positions per slot size).
inline constexpr uint64_t kInputAlign = 4096;
// Most consecutive nodes a backend runs as one kernel (see above).
inline constexpr int64_t kFuseWindow = 5;

// n_devices: arenas to plan (tensors' devices must be below it).
MemoryPlan plan_memory(const Graph& graph, int n_devices = 1);

}  // namespace polyinfer
