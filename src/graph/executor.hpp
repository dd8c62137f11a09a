// Runs a scheduled Graph (scheduler.hpp) on its devices: plans one arena per
// device (a CPU device's beside accelerators in host memory one of them has
// page-locked: host_arena.hpp), writes host inputs where they live, submits
// each run of consecutive nodes of one device as one graph on its stream, and
// performs the copy nodes through host memory (the source device is synced
// first; a CPU source is written from its arena itself). run() returns when
// every device is done.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "backend/device.hpp"
#include "graph/graph.hpp"
#include "graph/host_arena.hpp"
#include "graph/memory_plan.hpp"
#include "graph/pinned_host.hpp"

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
  // start() in two halves, so that the host work of submitting a graph is
  // done while the devices still run the one before: prepare() lays the
  // graph out by `plan` and hands each device's run of nodes to the backend's
  // graph_prepare (abi.h); start_prepared() then writes the inputs and
  // submits what prepare() laid out, with `graph` the same graph, unchanged.
  // A decode step's next graph is known before its token (docs/RUNTIME.md):
  // the CUDA backend's share of the submit (its fused units, signature and
  // cache lookup, 86 us on llama-1b with the GPU idle, H200 host, session 24)
  // then runs while the GPU works. Nothing is prepared when the plan needs a
  // larger arena than the devices have (start() grows it, moving every
  // address). start() drops what was prepared; start_prepared() throws
  // Error(kInvalidArgument) when nothing is.
  void prepare(const Graph& graph, const MemoryPlan& plan);
  bool prepared() const { return prepared_.has_value(); }
  void start_prepared(const Graph& graph, std::span<const HostInput> inputs);
  // Copies a contiguous output of the last run to dst (Graph::nbytes(t) bytes).
  void read(const Graph& graph, TensorId t, void* dst) const;
  // read() into host memory the executor owns, page-locked by the output's
  // device where it is an accelerator that can (pinned_host.hpp), and returns
  // those Graph::nbytes(t) bytes; valid until the next read_back. A decode
  // step's logits then come back by DMA: llama-8b's 513 KB had taken about
  // 140 us through the CUDA driver's staging of pageable memory (H200 host,
  // BENCHMARKS.md session 12), with the GPU idle until the next step.
  // Throws Error(kBackend) when the host has no memory for it.
  std::span<const uint8_t> read_back(const Graph& graph, TensorId t);
  // The arena of a device, as large as the largest graph run so far needed.
  uint64_t arena_bytes(int device) const { return arena(device).size(); }

 private:
  // A run of one device's nodes in ABI form, or a copy node (copy: from
  // `device` to dst_device).
  struct Segment {
    int device = -1;
    std::vector<pi_node> nodes;
    bool copy = false;
    int dst_device = -1;
    pi_tensor from{}, to{};
    uint64_t bytes = 0;
  };
  struct Prepared {
    MemoryPlan plan;
    std::vector<Segment> segments;
    std::vector<bool> ready;  // per device: its backend took the graph_prepare
  };

  pi_tensor to_abi(const Graph& graph, TensorId t) const;  // by the last run's plan
  pi_tensor to_abi(const Graph& graph, const MemoryPlan& plan, TensorId t) const;
  const BackendDevice& device_of(const Graph& graph, TensorId t) const;
  std::vector<Segment> lay_out(const Graph& graph, const MemoryPlan& plan) const;
  bool fits(const MemoryPlan& plan) const;  // every arena is large enough
  void write_inputs(const Graph& graph, std::span<const HostInput> inputs);
  // Submits the segments in order (a device's prepared run through
  // submit_prepared) and performs the copies.
  void launch(const std::vector<Segment>& segs, const std::vector<bool>& prepared);
  const DeviceBuffer& arena(int device) const;
  // Replaces device d's arena by one of `size` bytes: a CPU device's beside
  // accelerators in page-locked host memory (host_arena.hpp).
  void grow(size_t d, uint64_t size);
  void copy(const Segment& c);

  std::vector<const BackendDevice*> devices_;
  std::vector<const BackendDevice*> accelerators_;  // the devices that are not CPUs
  std::vector<DeviceBuffer> arenas_;
  std::vector<HostArena> host_arenas_;  // a CPU device's arena, where one is pinned
  std::vector<bool> busy_;              // work submitted and not yet synced
  MemoryPlan plan_;
  std::optional<Prepared> prepared_;
  std::vector<uint8_t> staging_;
  PinnedHost readback_;                          // read_back's memory
  const BackendDevice* readback_dev_ = nullptr;  // the device that pinned it, if any
};

}  // namespace polyinfer
