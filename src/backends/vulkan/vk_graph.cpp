#include "backends/vulkan/vk_graph.hpp"

#include <algorithm>
#include <cstring>

#include "backends/vulkan/vk_check.hpp"

namespace polyinfer::vk {
namespace {

constexpr size_t kMaxRecorded = 256;
// A plan's scratch up to this size lies in host-mapped device memory with
// the parameter words (a decode step's: codes and counters, tens of KiB); a
// prompt's larger one stays in device memory.
constexpr uint64_t kMaxMappedScratch = 4ull << 20;

void compute_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

// A slot's descriptor; a scratch region (no buffer in the plan) lies in this
// recording's scratch (Recording::scratch_buffer).
VkDescriptorBufferInfo buffer_info(const Binding& b, const Recording& r) {
  if (b.buffer != VK_NULL_HANDLE) return {b.buffer, b.desc_offset, b.range};
  return {r.scratch_buffer(), r.scratch_base() + b.desc_offset, b.range};
}

// The plan's zeroed words when the host can zero them: one range from the
// scratch's start (vk_graph_plan.cpp's reserve_zeroed), else 0.
uint64_t host_zeroed_bytes(const GraphPlan& plan) {
  if (plan.zeroed.size() != 1 || plan.zeroed[0].first != 0) return 0;
  return plan.zeroed[0].second;
}

// The span's pool, reset by the command buffer itself, and its first
// timestamp: at the bottom of the pipe it is written once everything queued
// before has finished, so a graph queued while the GPU was busy starts where
// the work before it ended.
void begin_span(pi_device dev, Recording& r) {
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  check(vkCreateQueryPool(dev->device, &qi, nullptr, &r.span), "vkCreateQueryPool");
  vkCmdResetQueryPool(r.cmd, r.span, 0, 2);
  vkCmdWriteTimestamp(r.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r.span, 0);
}

}  // namespace

Recording::~Recording() {
  if (cmd) vkFreeCommandBuffers(dev->device, dev->command_pool, 1, &cmd);
  if (queries) vkDestroyQueryPool(dev->device, queries, nullptr);
  if (span) vkDestroyQueryPool(dev->device, span, nullptr);
  if (pool) vkDestroyDescriptorPool(dev->device, pool, nullptr);
  dev->allocator->destroy_host_buffer(params);
  if (params_dev.block) dev->allocator->release(params_dev);
  if (scratch.block) dev->allocator->release(scratch);
}

VkBuffer Recording::scratch_buffer() const {
  return mapped_scratch > 0 ? params.buffer : scratch.block->buffer;
}

uint64_t Recording::scratch_base() const {
  return mapped_scratch > 0 ? mapped_scratch : scratch.offset;
}

void Recording::zero_words() {
  if (zero_bytes > 0)
    std::memset(static_cast<uint8_t*>(params.mapped) + mapped_scratch, 0, zero_bytes);
}

Recording* RecordedGraph::idle() const {
  for (const auto& r : recordings)
    if (r->in_flight == 0) return r.get();
  return nullptr;
}

Recording* RecordedGraph::record(pi_device dev, const GraphPlan& plan) {
  auto rec = std::make_unique<Recording>(dev);
  Recording& r = *rec;
  const uint32_t nn = std::max<uint32_t>(static_cast<uint32_t>(plan.dispatches.size()), 1);
  const uint64_t param_bytes = uint64_t{nn} * kParamWords * 4;
  // Written by the host only: write-combined memory will do. Host-mapped
  // device memory also takes a small scratch after the parameters (at a
  // multiple of 512 bytes: every storage offset alignment), its zeroed words
  // zeroed by the host.
  const bool scratch_mapped = plan.scratch_bytes <= kMaxMappedScratch;
  if (dev->direct_params) {
    r.params = dev->allocator->create_device_host_buffer(
        param_bytes + (scratch_mapped ? plan.scratch_bytes : 0),
        VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
            VK_BUFFER_USAGE_TRANSFER_DST_BIT);
    if (r.params.buffer != VK_NULL_HANDLE && scratch_mapped) {
      r.mapped_scratch = param_bytes;
      r.zero_bytes = host_zeroed_bytes(plan);
    }
  }
  if (r.params.buffer == VK_NULL_HANDLE) {
    r.params =
        dev->allocator->create_host_buffer(param_bytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, false);
    r.params_dev = dev->allocator->allocate(param_bytes);
  }
  if (plan.scratch_bytes > 0 && r.mapped_scratch == 0)
    r.scratch = dev->allocator->allocate(plan.scratch_bytes);
  const VkDescriptorPoolSize ps[2] = {{VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, nn},
                                      {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nn * kParamTensors}};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = nn;
  pci.poolSizeCount = 2;
  pci.pPoolSizes = ps;
  check(vkCreateDescriptorPool(dev->device, &pci, nullptr, &r.pool), "vkCreateDescriptorPool");
  std::vector<VkDescriptorSetLayout> layouts(nn, dev->set_layout);
  std::vector<VkDescriptorSet> sets(nn);
  VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dai.descriptorPool = r.pool;
  dai.descriptorSetCount = nn;
  dai.pSetLayouts = layouts.data();
  check(vkAllocateDescriptorSets(dev->device, &dai, sets.data()), "vkAllocateDescriptorSets");

  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = dev->command_pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(dev->device, &cai, &r.cmd), "vkAllocateCommandBuffers");
  // No SIMULTANEOUS_USE: a recording in flight is never queued again (its
  // parameter words belong to that submission).
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  check(vkBeginCommandBuffer(r.cmd, &bi), "vkBeginCommandBuffer");
  if (dev->profile_span) begin_span(dev, r);
  // Earlier submissions on the queue (uploads, other graphs, this recording's
  // previous run reading its parameters) touched what this reads and writes.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  vkCmdPipelineBarrier(r.cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                       &mb, 0, nullptr, 0, nullptr);
  const bool copied = r.params_dev.block != nullptr;
  const VkBuffer pbuf = copied ? r.params_dev.block->buffer : r.params.buffer;
  const uint64_t pbase = copied ? r.params_dev.offset : 0;
  if (copied) {
    const VkBufferCopy region{0, pbase, param_bytes};
    vkCmdCopyBuffer(r.cmd, r.params.buffer, pbuf, 1, &region);
  }
  const bool fills = r.zero_bytes == 0 && !plan.zeroed.empty();
  if (fills) {
    for (const auto& [first, last] : plan.zeroed)
      vkCmdFillBuffer(r.cmd, r.scratch_buffer(), r.scratch_base() + first, last - first, 0);
  }
  if (copied || fills) {
    VkMemoryBarrier pb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    pb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    pb.dstAccessMask =
        VK_ACCESS_UNIFORM_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(r.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &pb, 0, nullptr, 0, nullptr);
  }
  if (dev->profile_nodes) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2 * nn;
    check(vkCreateQueryPool(dev->device, &qi, nullptr, &r.queries), "vkCreateQueryPool");
    // Reset in the command buffer itself, so every replay starts with unwritten queries.
    vkCmdResetQueryPool(r.cmd, r.queries, 0, 2 * nn);
  }

  for (uint32_t i = 0; i < plan.dispatches.size(); ++i) {
    const DispatchPlan& np = plan.dispatches[i];
    VkDescriptorBufferInfo infos[kParamTensors];
    for (uint32_t s = 0; s < kParamTensors; ++s) infos[s] = buffer_info(np.slots[s], r);
    VkDescriptorBufferInfo pinfo{pbuf, pbase + uint64_t{i} * kParamWords * 4, kParamWords * 4};
    // Binding 0 the parameters, 1 the sources, 2 the destination, 3 the further ones.
    const uint32_t counts[4] = {1, 4, 1, kParamTensors - 5};
    const VkDescriptorBufferInfo* firsts[4] = {&pinfo, infos, &infos[4], &infos[5]};
    VkWriteDescriptorSet wr[4]{};
    for (uint32_t k = 0; k < 4; ++k) {
      wr[k].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      wr[k].dstSet = sets[i];
      wr[k].dstBinding = k;
      wr[k].descriptorType =
          k == 0 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      wr[k].descriptorCount = counts[k];
      wr[k].pBufferInfo = firsts[k];
    }
    vkUpdateDescriptorSets(dev->device, 4, wr, 0, nullptr);

    if (np.barrier) compute_barrier(r.cmd);
    vkCmdBindPipeline(r.cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                      dev->pipeline({np.op.shader, np.op.spec, np.op.n_spec}));
    vkCmdBindDescriptorSets(r.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->pipeline_layout, 0, 1,
                            &sets[i], 0, nullptr);
    // Profiling puts a barrier before every dispatch (plan_graph), so the
    // pair spans this dispatch alone.
    if (r.queries)
      vkCmdWriteTimestamp(r.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, r.queries, 2 * i);
    vkCmdDispatch(r.cmd, np.groups_x, np.groups_y, 1);
    if (r.queries)
      vkCmdWriteTimestamp(r.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, r.queries, 2 * i + 1);
  }
  if (r.span) vkCmdWriteTimestamp(r.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, r.span, 1);
  check(vkEndCommandBuffer(r.cmd), "vkEndCommandBuffer");
  recordings.push_back(std::move(rec));
  return &r;
}

std::shared_ptr<RecordedGraph> recorded_graph(pi_device dev, const GraphPlan& plan) {
  if (auto it = dev->graphs.find(plan.key); it != dev->graphs.end()) return it->second;
  if (dev->graphs.size() >= kMaxRecorded) dev->graphs.erase(dev->graphs.begin());
  auto rg = std::make_shared<RecordedGraph>();
  dev->graphs.emplace(plan.key, rg);
  return rg;
}

}  // namespace polyinfer::vk
