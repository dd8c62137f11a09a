// Runs a Graph on one device: plans the arena, uploads host inputs, turns the
// graph into ABI nodes, submits them on the device's stream and waits.
// (Placement across several devices is the scheduler's job, on top of this.)
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "backend/device.hpp"
#include "graph/graph.hpp"
#include "graph/memory_plan.hpp"

namespace polyinfer {

struct HostInput {
  TensorId id;
  const void* data;  // Graph::nbytes(id) bytes
};

class GraphExecutor {
 public:
  explicit GraphExecutor(const BackendDevice& dev) : dev_(dev) {}

  // Throws Error(kBackend) when the device fails or rejects a node.
  void run(const Graph& graph, std::span<const HostInput> inputs);
  // Copies a contiguous output of the last run to dst (Graph::nbytes(t) bytes).
  void read(const Graph& graph, TensorId t, void* dst) const;
  uint64_t arena_bytes() const { return arena_.size(); }

 private:
  pi_tensor to_abi(const Graph& graph, TensorId t) const;

  const BackendDevice& dev_;
  DeviceBuffer arena_;
  MemoryPlan plan_;
  std::vector<pi_node> nodes_;
};

}  // namespace polyinfer
