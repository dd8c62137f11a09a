// How a graph runs on a device, split in two: what a recorded command buffer
// bakes in (the key: pipelines, descriptor bindings, workgroup grids and
// barriers) and what the shaders read as data at run time (the parameter
// words: each tensor's byte offset within its binding, shapes, strides, op
// params). Graphs that differ only in the data share one recording: a decode
// step's KV length and cache write offset, and wherever the memory plan put
// the activations within the same VkBuffer.
#pragma once
#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/vulkan/vk_device.hpp"
#include "backends/vulkan/vk_ops.hpp"

namespace polyinfer::vk {

// Where a tensor is bound: a window of its block's VkBuffer, and the tensor's
// byte offset within that window.
struct Binding {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t desc_offset = 0, range = 0;
  uint32_t offset = 0;
};

// Slots 0..3 are src0..src3, 4 is dst; an absent source is bound to dst.
struct NodePlan {
  OpPlan op;
  std::array<Binding, 5> slots;
  uint32_t groups_x = 0, groups_y = 0;
  bool barrier = false;  // waits for the earlier nodes of the graph
};

struct GraphPlan {
  std::string key;  // everything a recording bakes in, and nothing else
  std::vector<NodePlan> nodes;
};

// Validates every node (throws VkError with PI_ERR_UNSUPPORTED or
// PI_ERR_INVALID naming the node). serialize: a barrier before every node,
// so that profiling timestamps span one node each.
GraphPlan plan_graph(pi_device dev, const pi_graph& g, bool serialize);

// Node i's kParamWords parameter words at words + i * kParamWords
// (shaders/common.glsl reads them).
void write_params(const pi_graph& g, const GraphPlan& plan, uint32_t* words);

}  // namespace polyinfer::vk
