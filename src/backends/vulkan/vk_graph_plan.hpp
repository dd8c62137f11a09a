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
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/vulkan/vk_device.hpp"
#include "backends/vulkan/vk_fusion.hpp"
#include "backends/vulkan/vk_hazards.hpp"
#include "backends/vulkan/vk_ops.hpp"

namespace polyinfer::vk {

// Where a tensor is bound: a window of its block's VkBuffer, and the tensor's
// byte offset within that window. buffer VK_NULL_HANDLE: a region of the
// recording's scratch buffer, desc_offset bytes into it (vk_graph.cpp binds it).
struct Binding {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t desc_offset = 0, range = 0;
  uint32_t offset = 0;
};

// One dispatch: one node, a fused unit of nodes (vk_fusion.hpp), or the
// quantization of a product's activations (count 0: node `first`'s src1).
// Slots 0..3 are the sources, 4 the destination, 5..7 a fused dispatch's
// further destinations (kParamTensors); a slot without a tensor is bound to
// the destination. A scratch region's tensor has no buffer and the shape it
// was quantized from.
struct DispatchPlan {
  OpPlan op;
  std::array<pi_tensor, kParamTensors> tensors{};
  std::array<Binding, kParamTensors> slots;
  int32_t param_node = -1;  // whose i[] and f[] the shader reads; -1: none
  uint32_t first = 0, count = 1;
  // Later nodes that a product's epilogue computes (Unit::rope, Unit::cache,
  // Unit::norm's ADD, or Unit::swiglu's up product and SWIGLU; 0: none).
  std::array<uint32_t, 2> folded{};
  uint32_t groups_x = 0, groups_y = 0;
  bool barrier = false;  // waits for the earlier dispatches of the graph
  // The bytes it reads, ranges[0, n_reads), then those it writes (n_writes):
  // what vk_plan_reuse.cpp checks when it refreshes a tensor.
  std::array<ByteRange, 10> ranges{};
  uint8_t n_reads = 0, n_writes = 0;
};

struct GraphPlan {
  std::string key;  // everything a recording bakes in, and nothing else
  std::vector<DispatchPlan> dispatches;
  // The recording's scratch buffer: 8-bit activations, the split decode
  // attention's partial results, and the words below.
  uint64_t scratch_bytes = 0;
  // Scratch bytes [first, second) set to zero before every run of the recording
  // (the split decode attention's counts, the ROPE pairs' words of K-quant
  // products' epilogues, the counts per 32 rows of products that make a
  // norm's or SWIGLU's codes).
  std::vector<std::pair<uint64_t, uint64_t>> zeroed;
  std::vector<Unit> units;  // how plan_units cut the graph
};

// Validates every node (throws VkError with PI_ERR_UNSUPPORTED or
// PI_ERR_INVALID naming the node) and writes the plan over *plan, reusing
// its storage. serialize: a barrier before every dispatch, so that profiling
// timestamps span one dispatch each.
void plan_graph(pi_device dev, const pi_graph& g, bool serialize, GraphPlan* plan);

// A tensor's bytes in its block's VkBuffer.
ByteRange tensor_bytes(const pi_tensor& t);
// Tensor t's binding as slot `role` of node `node`, its binding starting at
// a multiple of `piece` bytes (throws VkError when the device cannot bind it).
Binding bind_tensor(pi_device dev, const pi_tensor& t, uint64_t piece, uint32_t node,
                    const char* role);
// Whether FLASH_ATTN node n, bound as `slots`, takes shaders/flash_attn_vec.comp.
bool attn_vec(const pi_node& n, const std::array<Binding, kParamTensors>& slots);

// Dispatch i's kParamWords parameter words at words + i * kParamWords
// (shaders/common.glsl reads them).
void write_params(const pi_graph& g, const GraphPlan& plan, uint32_t* words);
// Only dispatches `which` (vk_plan_reuse.hpp: a kept plan's decode fields).
void write_params(const pi_graph& g, const GraphPlan& plan, std::span<const uint32_t> which,
                  uint32_t* words);

}  // namespace polyinfer::vk
