// Runs a scheduled Graph (scheduler.hpp) on its devices: plans one arena per
// device (a CPU device's beside accelerators in host memory one of them has
// page-locked: host_arena.hpp), writes host inputs where they live, submits
// each run of consecutive nodes of one device as one graph on its stream, and
// performs the copy nodes through host memory (the source device is synced
// first; a CPU source is written from its arena itself). run() returns when
// every device is done.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "backend/device.hpp"
#include "graph/graph.hpp"
#include "graph/host_arena.hpp"
#include "graph/memory_plan.hpp"

namespace polyinfer {

struct HostInput {
  TensorId id;
  const void* data;  // Graph::nbytes(id) bytes
};

class GraphExecutor {
 public:
  // devices[i] is device i of the graphs to run; they must outlive the executor.
  explicit GraphExecutor(std::vector<const BackendDevice*> devices);

  // Throws Error(kBackend) when a device fails or rejects a node.
  void run(const Graph& graph, std::span<const HostInput> inputs);
  // run() in two halves, so that the host may prepare the next graph while
  // the devices work: start() lays the graph out by `plan` (plan_memory of
  // it), writes the inputs and submits every node; finish() waits for the
  // devices. Nothing of the graph may be read before finish().
  void start(const Graph& graph, MemoryPlan plan, std::span<const HostInput> inputs);
  void finish();
  // Copies a contiguous output of the last run to dst (Graph::nbytes(t) bytes).
  void read(const Graph& graph, TensorId t, void* dst) const;
  // The arena of a device, as large as the largest graph run so far needed.
  uint64_t arena_bytes(int device) const { return arena(device).size(); }

 private:
  pi_tensor to_abi(const Graph& graph, TensorId t) const;
  const BackendDevice& device_of(const Graph& graph, TensorId t) const;
  void flush(int device);
  const DeviceBuffer& arena(int device) const;
  // Replaces device d's arena by one of `size` bytes: a CPU device's beside
  // accelerators in page-locked host memory (host_arena.hpp).
  void grow(size_t d, uint64_t size);
  void copy(const Graph& graph, const GraphNode& n);

  std::vector<const BackendDevice*> devices_;
  std::vector<const BackendDevice*> accelerators_;  // the devices that are not CPUs
  std::vector<DeviceBuffer> arenas_;
  std::vector<HostArena> host_arenas_;  // a CPU device's arena, where one is pinned
  std::vector<bool> busy_;              // work submitted and not yet synced
  MemoryPlan plan_;
  std::vector<pi_node> pending_;  // nodes of one device not yet submitted
  int pending_device_ = -1;
  std::vector<uint8_t> staging_;
};

}  // namespace polyinfer
