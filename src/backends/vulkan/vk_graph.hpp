// Recorded command buffers, one set per graph key (vk_graph_plan.hpp): a
// replay only rewrites the recording's parameter words. Each recording has its
// own parameter buffer (and profiling queries), so it is reused only once its
// last submission has finished; a shape gets a second recording only when it
// is queued again while the first is still in flight.
#pragma once
#include <vulkan/vulkan.h>

#include <memory>
#include <vector>

#include "backends/vulkan/vk_device.hpp"
#include "backends/vulkan/vk_graph_plan.hpp"

namespace polyinfer::vk {

struct Recording {
  explicit Recording(pi_device dev) : dev(dev) {}
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  pi_device dev;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  // kParamWords per node, written by the host (params) and read by the
  // shaders: in device-local memory the host maps where the device has it
  // (pi_device_s::direct_params), else copied by the recording's first
  // command from host memory into device-local memory (params_dev; null
  // block when not). Read straight from system memory they would cost every
  // workgroup a trip over the bus.
  Allocator::HostBuffer params;
  Allocation params_dev;
  // The plan's scratch regions (GraphPlan::scratch_bytes): 8-bit activations.
  Allocation scratch;
  // With the parameters in host-mapped device memory, a small scratch lies
  // after them at byte mapped_scratch (0: in `scratch`), and the host zeroes
  // the plan's zeroed words (counters the dispatches count in; zero_bytes
  // from the scratch's start) before each submission (zero_words), where the
  // recording's first commands fill them, behind a barrier of their own.
  uint64_t mapped_scratch = 0, zero_bytes = 0;
  VkBuffer scratch_buffer() const;
  uint64_t scratch_base() const;
  void zero_words();
  // Profiling: timestamps 2i and 2i+1 around dispatch i (reset at the buffer's start).
  VkQueryPool queries = VK_NULL_HANDLE;
  // Profiling spans: timestamp 0 once everything queued before has finished,
  // 1 after the last dispatch.
  VkQueryPool span = VK_NULL_HANDLE;
  int in_flight = 0;          // submissions whose fence has not been seen signalled
  uint64_t params_epoch = 0;  // the PlanReuse::epoch() of the plan its words were written for
};

// The recordings of one graph key.
struct RecordedGraph {
  // A recording not in flight, or nullptr.
  Recording* idle() const;
  // Records one more for this plan (the graph's first, or one more in flight).
  Recording* record(pi_device dev, const GraphPlan& plan);
  std::vector<std::unique_ptr<Recording>> recordings;
};

// The device's entry for this plan's key, created empty on a miss.
std::shared_ptr<RecordedGraph> recorded_graph(pi_device dev, const GraphPlan& plan);

}  // namespace polyinfer::vk
