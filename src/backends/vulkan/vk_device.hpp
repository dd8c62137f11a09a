// An opened Vulkan device: logical device, one compute queue, the memory
// allocator, the shader pipelines (created on first use) and the cache of
// recorded graphs.
#pragma once
#include <vulkan/vulkan.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/vulkan/vk_features.hpp"
#include "backends/vulkan/vk_host_import.hpp"
#include "backends/vulkan/vk_memory.hpp"
#include "backends/vulkan/vk_ops.hpp"
#include "backends/vulkan/vk_profiler.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::vk {

struct RecordedGraph;  // vk_graph.hpp

struct PipelineKey {
  std::string shader;
  SpecConstants spec{};
  uint32_t n_spec = 0;
  bool operator<(const PipelineKey& o) const {
    return std::tie(shader, spec, n_spec) < std::tie(o.shader, o.spec, o.n_spec);
  }
};

}  // namespace polyinfer::vk

struct pi_device_s {
  pi_device_s(VkPhysicalDevice pd, VkDevice dev, uint32_t family);
  ~pi_device_s();

  VkPipeline pipeline(const polyinfer::vk::PipelineKey& key);  // throws VkError
  // Queues the streams' held writes, waits for the queue to drain and drops
  // every recorded graph (their descriptors name buffers that are about to
  // go away, which the held writes may copy into).
  void drop_recordings();

  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family;
  VkPhysicalDeviceLimits limits{};
  polyinfer::vk::Features features;
  // POLYINFER_VULKAN_PROFILE set: streams keep a Profiler. When the queue also
  // has timestamps, recordings time every node (=1: profile_nodes) or their
  // whole span (=span: profile_span).
  bool profile = false, profile_nodes = false, profile_span = false;
  polyinfer::vk::TimestampCaps timestamps;
  // A read back polls its fence a while before sleeping in the driver, for
  // the host to start the next decode step sooner: on discrete GPUs only (a
  // CPU device such as lavapipe computes on the cores a poll would take; an
  // integrated GPU shares the CPU's power budget). The device option poll=0|1
  // overrides it.
  bool poll_fences = false;
  // Recordings keep their parameter words (and a small scratch, whose
  // counters the host zeroes) in device-local memory that the host writes
  // through its mapping (Allocator::create_device_host_buffer), where the
  // device has such memory: a decode step's graph then starts without
  // copying them over the bus and filling the counters behind a barrier
  // (13.6-15 us of every step on the H200, 4.5 us without). The device
  // option direct_params=0 (or POLYINFER_VULKAN_DIRECT_PARAMS=0) copies them.
  bool direct_params = true;
  // buffer_wrap_host (VK_EXT_external_memory_host, enabled where the device
  // has it) and the host ranges wrapped so far, which buffer_write and
  // buffer_read copy to and from by DMA.
  polyinfer::vk::HostImportCaps host_import;
  polyinfer::vk::HostImports imports;
  std::unique_ptr<polyinfer::vk::Allocator> allocator;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  std::map<std::string, VkShaderModule> modules;
  std::map<polyinfer::vk::PipelineKey, VkPipeline> pipelines;
  std::unordered_map<std::string, std::shared_ptr<polyinfer::vk::RecordedGraph>> graphs;
  // buffer_free calls so far: a kept plan names its buffers by handle, and a
  // freed handle may come back for another allocation (vk_plan_reuse.hpp).
  std::atomic<uint64_t> buffers_freed{0};
  // The open streams: their held writes go to the queue before a buffer is
  // freed (drop_recordings).
  std::vector<pi_stream_s*> streams;
  std::string error;
};

struct pi_buffer_s {
  pi_device dev;
  polyinfer::vk::Allocation alloc;
  uint64_t size;
  // buffer_wrap_host: the imported block `alloc` lies in, and its host address.
  std::unique_ptr<polyinfer::vk::Block> imported;
  void* host = nullptr;
};
