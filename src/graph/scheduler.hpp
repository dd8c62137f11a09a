// Where each node of a graph runs across the devices of a run, and the copies
// between them (docs/BACKENDS.md, "Placement").
//
//   ScheduledGraph s = schedule(graph, devices, options);
//   executor.run(s.graph, inputs);      // every node on its device, copies explicit
//
// Rules, in order:
//  1. A node runs on the device its builder wished (GraphNode::device) when that
//     device supports it (pi_backend_vtable::supports, asked with placeholder
//     buffers); otherwise on the CPU device, noted once with the op and why.
//  2. Cost rule: a run of consecutive nodes on one accelerator that touches none
//     of that device's own buffers (weights, KV cache) moves to the CPU when its
//     work is below min_flops_per_byte x the bytes that would have to be copied
//     in, since the copy costs more than the device saves.
//  3. A tensor lives where its first writer runs (host inputs: where their first
//     reader runs; bound tensors: where their buffer is). A node that reads a
//     tensor living elsewhere reads a replica that a copy node brings over (the
//     bytes its view spans, not the whole buffer), reused until the tensor is
//     written again. A node that writes a tensor living elsewhere writes a
//     replica, copied back after it.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.hpp"

namespace polyinfer {

// What the scheduler needs to know of each device.
struct SchedDevice {
  std::string name;                              // "cuda:0"
  std::function<bool(const pi_node&)> supports;  // the backend's capability query
};

struct ScheduleOptions {
  int cpu_device = 0;               // the host's device: runs what the others cannot
  double min_flops_per_byte = 8.0;  // cost rule threshold (rule 2)

  // min_flops_per_byte from POLYINFER_OFFLOAD_MIN_INTENSITY when set. Throws
  // Error(kInvalidArgument) for a value that is not a non-negative number.
  static ScheduleOptions from_environment(int cpu_device);
};

struct ScheduledGraph {
  Graph graph;                     // every node's and owner's device final; copies explicit
  std::vector<std::string> notes;  // one line per (op, device, reason) sent to the CPU
  uint64_t copy_bytes = 0;         // bytes the copy nodes move per run
  int copies = 0;                  // copy nodes
};

// devices[i] is graph device i. Throws Error(kInvalidArgument) when options.cpu_device is
// not one of them.
ScheduledGraph schedule(const Graph& graph, std::span<const SchedDevice> devices,
                        const ScheduleOptions& options);

// Floating-point operations of a node (multiply-adds count 2), for the cost rule.
double node_flops(const Graph& graph, const GraphNode& node);

}  // namespace polyinfer
