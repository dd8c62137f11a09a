// A graph recorded once into a command buffer and replayed on every submit
// with the same signature (ops, params, types, shapes, strides and the
// resolved VkBuffer + byte offset of every tensor).
#pragma once
#include <vulkan/vulkan.h>

#include <memory>
#include <string>

#include "backends/vulkan/vk_device.hpp"

namespace polyinfer::vk {

struct RecordedGraph {
  RecordedGraph(pi_device dev) : dev(dev) {}
  ~RecordedGraph();
  pi_device dev;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  Allocator::HostBuffer params;  // kParamWords per node, read by the shaders
  // Profiling: timestamps 2i and 2i+1 around node i (reset at the buffer's start).
  VkQueryPool queries = VK_NULL_HANDLE;
};

// The cache key of a graph; also validates every node (throws VkError with
// PI_ERR_UNSUPPORTED or PI_ERR_INVALID naming the node).
std::string graph_signature(pi_device dev, const pi_graph& g);

// The recorded graph for this signature, recording it on a miss (*recorded
// says which).
std::shared_ptr<RecordedGraph> recorded_graph(pi_device dev, const pi_graph& g,
                                              const std::string& signature, bool* recorded);

}  // namespace polyinfer::vk
