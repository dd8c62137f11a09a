#include "backends/vulkan/vk_graph_plan.hpp"

#include <algorithm>
#include <cstring>

#include "backends/vulkan/vk_check.hpp"
#include "backends/vulkan/vk_hazards.hpp"
#include "backends/vulkan/vk_instance.hpp"

namespace polyinfer::vk {
namespace {

constexpr uint32_t kMaxGroupsX = 65535;
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

// A tensor's bytes in its block's VkBuffer.
ByteRange bytes_of(const pi_tensor& t) {
  const auto* buf = reinterpret_cast<const pi_buffer_s*>(t.buffer);
  const uint64_t start = buf->alloc.offset + t.offset;
  return {buf->alloc.block->buffer, start, start + tensor_extent(t)};
}

// The descriptor must not depend on where in its buffer a tensor sits, or
// every decode step (a new cache write offset, a mask one float longer that
// moves the activations) would need a new recording. So it binds the whole
// block when the device binds that many bytes at once (NVIDIA: 4 GiB), else
// the window of half the bindable range that holds the tensor's start: the
// binding changes only when a tensor crosses into the next window. A tensor
// larger than half the range is bound from its own (aligned) start. Under
// synchronization validation each tensor is bound to its own bytes instead:
// the layer takes a descriptor's range as what a dispatch reads or writes, so
// it can then check the barriers that plan_graph leaves out.
// A binding starts at a multiple of `piece` bytes and spans whole pieces:
// 16 for MUL_MAT's weights, which the matrix-vector shader reads as the
// 16-byte pieces around each row (shaders/staged_rows.glsl), 4 (words) else.
Binding bind(pi_device dev, const pi_tensor& t, uint64_t piece, uint32_t node, const char* role) {
  const auto* buf = reinterpret_cast<const pi_buffer_s*>(t.buffer);
  const uint64_t extent = tensor_extent(t);
  if (t.offset + extent > buf->size) {
    throw VkError(PI_ERR_INVALID, "node " + std::to_string(node) + ": " + role +
                                      " reaches past the end of its buffer");
  }
  const Block& block = *buf->alloc.block;
  const uint64_t start = buf->alloc.offset + t.offset;
  const uint64_t align = std::max<uint64_t>(dev->limits.minStorageBufferOffsetAlignment, piece);
  const uint64_t max_range = dev->limits.maxStorageBufferRange / piece * piece;
  Binding b;
  b.buffer = block.buffer;
  if (instance().sync_validation) {
    b.desc_offset = start / align * align;
    b.range = std::min(block.size, (start + extent + piece - 1) / piece * piece) - b.desc_offset;
    b.offset = static_cast<uint32_t>(start - b.desc_offset);
    return b;
  }
  if (block.size > max_range) {
    const uint64_t window = std::max(align, max_range / 2 / align * align);
    b.desc_offset = start / window * window;
    if (start - b.desc_offset + extent > max_range) b.desc_offset = start / align * align;
  }
  b.range = std::min(max_range, block.size - b.desc_offset);
  b.offset = static_cast<uint32_t>(start - b.desc_offset);
  if (b.offset + extent > b.range) {
    throw VkError(PI_ERR_UNSUPPORTED, "node " + std::to_string(node) + ": " + role + " spans " +
                                          std::to_string(extent) +
                                          " bytes, more than the device binds at once");
  }
  return b;
}

// Whether MUL_MAT may read src1 as vec4s: every column of every batch starts
// 16-byte aligned within its binding. It is a specialization constant (2)
// rather than a test in the shader, where a CPU driver (lavapipe) would run
// both sides of the branch.
bool activations_vec4(const Binding& b, const pi_tensor& src1) {
  return ((b.offset | src1.nb[1] | src1.nb[2] | src1.nb[3]) & 15u) == 0;
}

}  // namespace

GraphPlan plan_graph(pi_device dev, const pi_graph& g, bool serialize) {
  GraphPlan plan;
  plan.nodes.resize(g.n_nodes);
  plan.key.reserve(g.n_nodes * 140);
  HazardTracker hazards;
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    NodePlan& np = plan.nodes[i];
    std::string why;
    if (!plan_node(n, dev->features, &np.op, &why)) {
      throw VkError(PI_ERR_UNSUPPORTED, "Vulkan backend: node " + std::to_string(i) + " (" +
                                            pi_op_name(n.op) + ") is not supported: " + why);
    }
    ByteRange reads[4];
    size_t n_reads = 0;
    for (int s = 0; s < 5; ++s) {
      const int from = used(n, s) ? s : 4;
      const uint64_t piece = n.op == PI_OP_MUL_MAT && from == 0 ? 16 : 4;
      np.slots[s] = bind(dev, tensor_of(n, from), piece, i, kRoles[from]);
      if (s < 4 && from == s) reads[n_reads++] = bytes_of(n.src[s]);
    }
    if (n.op == PI_OP_MUL_MAT) np.op.spec[2] = activations_vec4(np.slots[1], n.src[1]) ? 1 : 0;
    const uint64_t gx = std::min<uint64_t>(np.op.groups, kMaxGroupsX);
    const uint64_t gy = (np.op.groups + gx - 1) / gx;
    if (gy > kMaxGroupsX) {
      throw VkError(PI_ERR_UNSUPPORTED, "node " + std::to_string(i) + " (" + pi_op_name(n.op) +
                                            ") needs more workgroups than one dispatch holds");
    }
    np.groups_x = static_cast<uint32_t>(gx);
    np.groups_y = static_cast<uint32_t>(gy);
    // The first node follows the recording's opening barrier.
    const bool wait = hazards.add_node({reads, n_reads}, bytes_of(n.dst));
    np.barrier = i > 0 && (serialize || wait);

    plan.key.append(np.op.shader);
    plan.key.push_back('\0');
    append(plan.key, np.op.spec);
    append(plan.key, np.groups_x);
    append(plan.key, np.groups_y);
    append(plan.key, np.barrier);
    for (const Binding& b : np.slots) {
      append(plan.key, b.buffer);
      append(plan.key, b.desc_offset);
      append(plan.key, b.range);
    }
  }
  return plan;
}

void write_params(const pi_graph& g, const GraphPlan& plan, uint32_t* words) {
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    const NodePlan& np = plan.nodes[i];
    uint32_t* p = words + uint64_t{i} * kParamWords;
    std::memset(p, 0, kParamWords * 4);
    for (int s = 0; s < 5; ++s) {
      const pi_tensor& t = tensor_of(n, used(n, s) ? s : 4);
      p[s * 9] = np.slots[s].offset;
      for (int d = 0; d < 4; ++d) {
        p[s * 9 + 1 + d] = static_cast<uint32_t>(t.ne[d]);
        p[s * 9 + 5 + d] = static_cast<uint32_t>(t.nb[d]);
      }
    }
    std::memcpy(p + 45, n.i, sizeof n.i);
    std::memcpy(p + 53, n.f, sizeof n.f);
    std::memcpy(p + kExtraBase, np.op.extra.data(), np.op.extra.size() * 4);
  }
}

}  // namespace polyinfer::vk
