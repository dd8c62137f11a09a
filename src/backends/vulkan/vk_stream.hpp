// A stream: submissions to the device's queue, in order, each with a fence.
// What a submission uses (staging memory, a one-shot command buffer, a
// recording and its parameter buffer) is kept until its fence signals, then
// recycled.
#pragma once
#include <vulkan/vulkan.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "backends/vulkan/vk_device.hpp"
#include "backends/vulkan/vk_graph.hpp"
#include "backends/vulkan/vk_graph_plan.hpp"
#include "backends/vulkan/vk_plan_reuse.hpp"
#include "backends/vulkan/vk_profiler.hpp"

struct pi_stream_s {
  explicit pi_stream_s(pi_device d);
  ~pi_stream_s();

  // buffer_write: copies src into staging first, so the caller may reuse it at once.
  void write(pi_buffer buf, uint64_t offset, const void* src, uint64_t size);
  // buffer_read: returns when dst holds the bytes (after earlier work on the stream).
  void read(pi_buffer buf, uint64_t offset, void* dst, uint64_t size);
  // graph_submit: the graph's recording (made on a cache miss) queued.
  void submit_graph(const pi_graph& g);
  // graph_prepare: plans g and writes its recording's parameter words now,
  // while earlier submissions run; queues nothing. The recording is held
  // (counted in flight) until submit_prepared or a drop.
  void prepare_graph(const pi_graph& g);
  // graph_submit_prepared: queues the prepared recording (planned again, as
  // submit_graph, when a buffer was freed since: its bindings may be gone).
  // False when nothing is prepared.
  bool submit_prepared();
  void sync();

  pi_device dev;

 private:
  struct Pending {
    VkFence fence = VK_NULL_HANDLE;
    VkCommandBuffer one_shot = VK_NULL_HANDLE;
    polyinfer::vk::Allocator::HostBuffer staging;
    std::shared_ptr<polyinfer::vk::RecordedGraph> graph;  // keeps `recording` alive
    polyinfer::vk::Recording* recording = nullptr;
    std::vector<std::string> profile_keys;  // the graph's nodes, when profiling
  };
  // A prepared graph: its nodes (the caller keeps them alive) and recording.
  struct Prepared {
    pi_graph graph;
    Pending pending;
    uint64_t freed;  // pi_device_s::buffers_freed at the prepare
  };
  // Plans g (a kept plan where it can), takes or records its recording and
  // writes its words; `action` names what happened, for the profile.
  Pending planned(const pi_graph& g, const char** action);
  void drop_prepared();
  void add_submit(const char* action, std::chrono::steady_clock::time_point t0);
  VkCommandBuffer begin_one_shot();
  void submit(Pending p, VkCommandBuffer cmd);
  void retire(bool wait_all);
  void release(Pending& p);
  polyinfer::vk::Recording* take_recording(polyinfer::vk::RecordedGraph& rg);
  polyinfer::vk::Allocator::HostBuffer acquire_staging(uint64_t size);
  VkFence acquire_fence();

  std::deque<Pending> pending_;
  std::vector<polyinfer::vk::Allocator::HostBuffer> free_staging_;
  std::vector<VkFence> free_fences_;
  uint64_t staging_in_flight_ = 0;
  std::unique_ptr<polyinfer::vk::Profiler> profiler_;  // POLYINFER_VULKAN_PROFILE=1
  // The last submitted graph's plan, kept for the next decode step or
  // planned over (its storage kept).
  polyinfer::vk::GraphPlan plan_;
  polyinfer::vk::PlanReuse reuse_;
  std::optional<Prepared> prepared_;
};
