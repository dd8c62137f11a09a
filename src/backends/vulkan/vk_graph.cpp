#include "backends/vulkan/vk_graph.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/vulkan/vk_check.hpp"
#include "backends/vulkan/vk_ops.hpp"

namespace polyinfer::vk {
namespace {

constexpr size_t kMaxRecorded = 256;
constexpr uint32_t kMaxGroupsX = 65535;

// Where a tensor is bound: the block's VkBuffer from an offset aligned to the
// device's minimum, and the tensor's byte offset within that range.
struct Binding {
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t desc_offset = 0, range = 0;
  uint32_t offset = 0;
};

Binding bind(pi_device dev, const pi_tensor& t, uint32_t node, const char* role) {
  const auto* buf = reinterpret_cast<const pi_buffer_s*>(t.buffer);
  const uint64_t extent = tensor_extent(t);
  if (t.offset + extent > buf->size) {
    throw VkError(PI_ERR_INVALID, "node " + std::to_string(node) + ": " + role +
                                      " reaches past the end of its buffer");
  }
  const uint64_t start = buf->alloc.offset + t.offset;
  const uint64_t align = std::max<uint64_t>(dev->limits.minStorageBufferOffsetAlignment, 4);
  Binding b;
  b.buffer = buf->alloc.block->buffer;
  b.desc_offset = start / align * align;
  const uint64_t max_range = dev->limits.maxStorageBufferRange / 4 * 4;
  b.range = std::min(max_range, buf->alloc.block->size - b.desc_offset);
  b.offset = static_cast<uint32_t>(start - b.desc_offset);
  if (b.offset + extent > b.range) {
    throw VkError(PI_ERR_UNSUPPORTED, "node " + std::to_string(node) + ": " + role + " spans " +
                                          std::to_string(extent) +
                                          " bytes, more than the device binds at once");
  }
  return b;
}

const char* const kRoles[5] = {"src0", "src1", "src2", "src3", "dst"};

const pi_tensor& tensor_of(const pi_node& n, int slot) {
  return slot < 4 ? n.src[slot] : n.dst;
}
bool used(const pi_node& n, int slot) {
  return slot == 4 || (static_cast<uint32_t>(slot) < n.n_src && n.src[slot].buffer != nullptr);
}

template <typename T>
void append(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Whether MUL_MAT may read src1 as vec4s: every column of every batch starts
// 16-byte aligned within its binding (p: the node's parameter words). It is a
// specialization constant (2) rather than a test in the shader, where a CPU
// driver (lavapipe) would run both sides of the branch.
bool activations_vec4(const uint32_t* p) {
  const uint32_t* s1 = p + 9;  // offset, ne[4], nb[4]
  return ((s1[0] | s1[6] | s1[7] | s1[8]) & 15u) == 0;
}

}  // namespace

RecordedGraph::~RecordedGraph() {
  if (cmd) vkFreeCommandBuffers(dev->device, dev->command_pool, 1, &cmd);
  if (queries) vkDestroyQueryPool(dev->device, queries, nullptr);
  if (pool) vkDestroyDescriptorPool(dev->device, pool, nullptr);
  dev->allocator->destroy_host_buffer(params);
}

std::string graph_signature(pi_device dev, const pi_graph& g) {
  std::string sig;
  sig.reserve(g.n_nodes * 360);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    OpPlan plan;
    std::string why;
    if (!plan_node(n, dev->features.subgroup_arith, &plan, &why)) {
      throw VkError(PI_ERR_UNSUPPORTED, "Vulkan backend: node " + std::to_string(i) + " (" +
                                            pi_op_name(n.op) + ") is not supported: " + why);
    }
    append(sig, n.op);
    append(sig, n.i);
    append(sig, n.f);
    for (int s = 0; s < 5; ++s) {
      if (!used(n, s)) {
        append(sig, uint64_t{0});
        continue;
      }
      const pi_tensor& t = tensor_of(n, s);
      const Binding b = bind(dev, t, i, kRoles[s]);
      append(sig, reinterpret_cast<uint64_t>(b.buffer));
      append(sig, b.desc_offset);
      append(sig, b.offset);
      append(sig, t.type);
      append(sig, t.ne);
      append(sig, t.nb);
    }
  }
  return sig;
}

std::shared_ptr<RecordedGraph> recorded_graph(pi_device dev, const pi_graph& g,
                                              const std::string& signature, bool* recorded) {
  *recorded = false;
  if (auto it = dev->graphs.find(signature); it != dev->graphs.end()) return it->second;
  *recorded = true;
  auto rg = std::make_shared<RecordedGraph>(dev);
  const uint32_t nn = std::max<uint32_t>(g.n_nodes, 1);
  rg->params = dev->allocator->create_host_buffer(uint64_t{nn} * kParamWords * 4,
                                                  VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nn * 6};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = nn;
  pci.poolSizeCount = 1;
  pci.pPoolSizes = &ps;
  check(vkCreateDescriptorPool(dev->device, &pci, nullptr, &rg->pool), "vkCreateDescriptorPool");
  std::vector<VkDescriptorSetLayout> layouts(nn, dev->set_layout);
  std::vector<VkDescriptorSet> sets(nn);
  VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  dai.descriptorPool = rg->pool;
  dai.descriptorSetCount = nn;
  dai.pSetLayouts = layouts.data();
  check(vkAllocateDescriptorSets(dev->device, &dai, sets.data()), "vkAllocateDescriptorSets");

  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = dev->command_pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(dev->device, &cai, &rg->cmd), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  // A replay may be queued again before the previous one finished.
  bi.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  check(vkBeginCommandBuffer(rg->cmd, &bi), "vkBeginCommandBuffer");
  // Earlier submissions on the queue (uploads, other graphs) wrote what this reads.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT;
  vkCmdPipelineBarrier(rg->cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  if (dev->profile_nodes) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2 * nn;
    check(vkCreateQueryPool(dev->device, &qi, nullptr, &rg->queries), "vkCreateQueryPool");
    // Reset in the command buffer itself, so every replay starts with unwritten queries.
    vkCmdResetQueryPool(rg->cmd, rg->queries, 0, 2 * nn);
  }

  auto* words = static_cast<uint32_t*>(rg->params.mapped);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    OpPlan plan;
    std::string why;
    plan_node(n, dev->features.subgroup_arith, &plan, &why);  // checked by graph_signature
    uint32_t* p = words + uint64_t{i} * kParamWords;
    std::memset(p, 0, kParamWords * 4);
    VkDescriptorBufferInfo infos[5];
    for (int s = 0; s < 5; ++s) {
      // An absent source is bound to the destination: the shader never reads it.
      const int from = used(n, s) ? s : 4;
      const pi_tensor& t = tensor_of(n, from);
      const Binding b = bind(dev, t, i, kRoles[from]);
      infos[s] = {b.buffer, b.desc_offset, b.range};
      p[s * 9] = b.offset;
      for (int d = 0; d < 4; ++d) {
        p[s * 9 + 1 + d] = static_cast<uint32_t>(t.ne[d]);
        p[s * 9 + 5 + d] = static_cast<uint32_t>(t.nb[d]);
      }
    }
    std::memcpy(p + 45, n.i, sizeof n.i);
    std::memcpy(p + 53, n.f, sizeof n.f);
    std::memcpy(p + kExtraBase, plan.extra.data(), plan.extra.size() * 4);

    VkDescriptorBufferInfo pinfo{rg->params.buffer, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet wr[2]{};
    wr[0].sType = wr[1].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    wr[0].dstSet = wr[1].dstSet = sets[i];
    wr[0].dstBinding = 0;
    wr[0].descriptorCount = 1;
    wr[0].descriptorType = wr[1].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    wr[0].pBufferInfo = &pinfo;
    wr[1].dstBinding = 1;
    wr[1].descriptorCount = 5;
    wr[1].pBufferInfo = infos;
    vkUpdateDescriptorSets(dev->device, 2, wr, 0, nullptr);

    const uint64_t gx = std::min<uint64_t>(plan.groups, kMaxGroupsX);
    const uint64_t gy = (plan.groups + gx - 1) / gx;
    if (gy > kMaxGroupsX) {
      throw VkError(PI_ERR_UNSUPPORTED, "node " + std::to_string(i) + " (" + pi_op_name(n.op) +
                                            ") needs more workgroups than one dispatch holds");
    }
    if (n.op == PI_OP_MUL_MAT) plan.spec[2] = activations_vec4(p) ? 1 : 0;
    vkCmdBindPipeline(rg->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
                      dev->pipeline({plan.shader, plan.spec, plan.n_spec}));
    vkCmdBindDescriptorSets(rg->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->pipeline_layout, 0, 1,
                            &sets[i], 0, nullptr);
    const uint32_t base = i * kParamWords;
    vkCmdPushConstants(rg->cmd, dev->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &base);
    // The barrier before a node orders it after the earlier ones, so the pair
    // spans this node alone.
    if (rg->queries)
      vkCmdWriteTimestamp(rg->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rg->queries, 2 * i);
    vkCmdDispatch(rg->cmd, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy), 1);
    if (rg->queries)
      vkCmdWriteTimestamp(rg->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rg->queries, 2 * i + 1);
    // The next node may read what this one wrote (ops run in graph order).
    VkMemoryBarrier nb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    nb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    nb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(rg->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &nb, 0, nullptr, 0, nullptr);
  }
  check(vkEndCommandBuffer(rg->cmd), "vkEndCommandBuffer");
  if (dev->graphs.size() >= kMaxRecorded) dev->graphs.erase(dev->graphs.begin());
  dev->graphs.emplace(signature, rg);
  return rg;
}

}  // namespace polyinfer::vk
