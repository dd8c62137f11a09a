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

  // buffer_write: copies src into staging first (or, from wrapped host memory,
  // 1 MiB and more, copies from it and waits), so the caller may reuse it at once.
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
  // Queues the writes held in the batch (pi_device_s::drop_recordings: before
  // a buffer they copy into goes away).
  void flush_batch();

  pi_device dev;

 private:
  struct Pending {
    VkFence fence = VK_NULL_HANDLE;
    // Copies queued ahead of the graph in the same submission (or alone).
    VkCommandBuffer one_shot = VK_NULL_HANDLE;
    std::vector<polyinfer::vk::Allocator::HostBuffer> staging;
    std::shared_ptr<polyinfer::vk::RecordedGraph> graph;  // keeps `recording` alive
    polyinfer::vk::Recording* recording = nullptr;
    std::vector<std::string> profile_keys;  // the graph's nodes, when profiling
  };
  // buffer_write's copies, recorded but not queued yet: they go to the queue
  // with the next graph, read or sync, in its submission. A decode step's
  // inputs (positions, mask, the token's embedding row) had been a submission
  // each, each a vkQueueSubmit and a fence while the GPU waited.
  struct Batch {
    Pending pending;  // its one_shot open for recording
    uint64_t bytes = 0;
    // Destinations written since the batch's last barrier: a copy that
    // overlaps one, or a read, waits for them.
    struct Range {
      VkBuffer buffer;
      uint64_t offset, size;
    };
    std::vector<Range> written;
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
  Batch& open_batch();
  // Orders a copy touching [offset, offset + size) of `buffer` (all of the
  // batch's writes, for a read: whole_batch) after the batch's earlier writes.
  void order_in_batch(Batch& b, VkBuffer buffer, uint64_t offset, uint64_t size, bool whole_batch);
  // The batch's copies and staging moved into p, to run first in its submission.
  void take_batch(Pending& p);
  // A read's wait: polls, then sleeps (pi_device_s::poll_fences).
  void wait_fence(VkFence f);
  // One copy queued after everything before it on the stream (after the
  // batch's writes: all of them when to_host, a read into host memory), and
  // waited for.
  void copy_now(VkBuffer from, uint64_t from_off, VkBuffer to, uint64_t to_off, uint64_t n,
                bool to_host);
  void add_submit(const char* action, std::chrono::steady_clock::time_point t0);
  VkCommandBuffer begin_one_shot();
  // Queues p's one_shot (when it has one) then `graph` (when not null) under one fence.
  void submit(Pending p, VkCommandBuffer graph);
  void retire(bool wait_all);
  void release(Pending& p);
  // A staging buffer no copy uses any more, kept for reuse or destroyed.
  void recycle(polyinfer::vk::Allocator::HostBuffer& st);
  polyinfer::vk::Recording* take_recording(polyinfer::vk::RecordedGraph& rg);
  // Staging of at least `size` bytes: host-cached for reads back (cached), else
  // write-combined, which the GPU reads without snooping the CPU's caches.
  polyinfer::vk::Allocator::HostBuffer acquire_staging(uint64_t size, bool cached);
  VkFence acquire_fence();

  std::deque<Pending> pending_;
  std::vector<polyinfer::vk::Allocator::HostBuffer> free_staging_;
  std::vector<VkFence> free_fences_;
  uint64_t staging_in_flight_ = 0;
  std::unique_ptr<polyinfer::vk::Profiler> profiler_;  // POLYINFER_VULKAN_PROFILE set
  // The last submitted graph's plan, kept for the next decode step or
  // planned over (its storage kept).
  polyinfer::vk::GraphPlan plan_;
  polyinfer::vk::PlanReuse reuse_;
  std::optional<Prepared> prepared_;
  std::optional<Batch> batch_;
};
