#include "backends/vulkan/vk_plan_reuse.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <span>
#include <string>

#include "backends/fusion_bytes.hpp"
#include "backends/vulkan/vk_check.hpp"
#include "backends/vulkan/vk_fusion.hpp"
#include "backends/vulkan/vk_hazards.hpp"

namespace polyinfer::vk {
namespace {

// A tensor's fields as bits of a mask: its offset, ne[d], nb[d].
constexpr uint16_t kOffset = 1;
constexpr uint16_t ne_bit(int d) {
  return static_cast<uint16_t>(2u << d);
}
constexpr uint16_t nb_bit(int d) {
  return static_cast<uint16_t>(32u << d);
}

// The decode fields of node n's tensor t (0..3 a source, 4 the destination):
// FLASH_ATTN's K and V views [D, n_kv, H_kv] (n_kv and the stride past it)
// and its mask [n_kv, T] (its length and its rows' strides); a CPY's
// destination offset (the cache rows it writes). Everything else of every
// node is in the signature.
uint16_t decode_fields(const pi_node& n, int t) {
  if (n.op == PI_OP_FLASH_ATTN && (t == 1 || t == 2)) return ne_bit(1) | nb_bit(3);
  if (n.op == PI_OP_FLASH_ATTN && t == 3) return ne_bit(0) | nb_bit(1) | nb_bit(2) | nb_bit(3);
  if (n.op == PI_OP_CPY && t == 4) return kOffset;
  return 0;
}
bool has_decode_fields(const pi_node& n) {
  return n.op == PI_OP_FLASH_ATTN || n.op == PI_OP_CPY;
}

const pi_tensor& tensor_at(const pi_node& n, int t) {
  return t < 4 ? n.src[t] : n.dst;
}

uint64_t pair(uint32_t lo, uint32_t hi) {
  return lo | uint64_t{hi} << 32;
}

// A tensor as words to `put`, the masked fields as 0. Its buffer by handle
// (PlanReuse::plan replans after any buffer_free, so a handle still names
// the same allocation): no buffer is looked into, a pointer chase fewer for
// each of llama-8b's ~3,000 tensors.
template <class Put>
void put_tensor(const pi_tensor& t, uint16_t mask, Put& put) {
  put(t.type);
  put(reinterpret_cast<uintptr_t>(t.buffer));
  put(mask & kOffset ? 0 : t.offset);
  for (int d = 0; d < 4; ++d) put(mask & ne_bit(d) ? 0 : static_cast<uint64_t>(t.ne[d]));
  for (int d = 0; d < 4; ++d) put(mask & nb_bit(d) ? 0 : t.nb[d]);
}

// The graph as words to `put`, its decode fields left out: equal words mean
// graphs that differ at most there.
template <class Put>
void put_graph(const pi_graph& g, Put& put) {
  put(g.n_nodes);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    put(pair(n.op, n.n_src));
    put(n.flags);  // the units (vk_fusion.cpp's drop_unread_norms)
    for (int k = 0; k < 8; k += 2) {
      put(pair(static_cast<uint32_t>(n.i[k]), static_cast<uint32_t>(n.i[k + 1])));
      put(pair(std::bit_cast<uint32_t>(n.f[k]), std::bit_cast<uint32_t>(n.f[k + 1])));
    }
    // Sources past n_src are not read (nor dereferenced).
    for (int t = 0; t < 5; ++t)
      if (t == 4 || static_cast<uint32_t>(t) < n.n_src)
        put_tensor(tensor_at(n, t), decode_fields(n, t), put);
  }
}

// Whether g's words equal `sig`, compared as they are made (a decode step's
// graph is ~40,000 words on llama-8b: no copy of them on a hit).
bool same_signature(const pi_graph& g, const std::vector<uint64_t>& sig) {
  size_t at = 0;
  bool same = true;
  auto put = [&](uint64_t w) {
    same = same && at < sig.size() && sig[at] == w;
    ++at;
  };
  put_graph(g, put);
  return same && at == sig.size();
}

bool same_op(const OpPlan& a, const OpPlan& b) {
  return std::strcmp(a.shader, b.shader) == 0 && a.spec == b.spec && a.n_spec == b.n_spec &&
         a.groups == b.groups && a.extra == b.extra;
}

std::span<const ByteRange> reads_of(const DispatchPlan& d) {
  return {d.ranges.data(), d.n_reads};
}
std::span<const ByteRange> writes_of(const DispatchPlan& d) {
  return {d.ranges.data() + d.n_reads, d.n_writes};
}

// Whether dispatch i conflicts with none of the dispatches it runs beside:
// those between the barriers around it.
bool stage_clear(const std::vector<DispatchPlan>& ds, size_t i) {
  size_t begin = i;
  while (begin > 0 && !ds[begin].barrier) --begin;
  size_t end = i + 1;
  while (end < ds.size() && !ds[end].barrier) ++end;
  for (size_t k = begin; k < end; ++k)
    if (k != i && hazard(reads_of(ds[i]), writes_of(ds[i]), reads_of(ds[k]), writes_of(ds[k])))
      return false;
  return true;
}

std::atomic<uint64_t> next_epoch{0};

}  // namespace

bool PlanReuse::plan(pi_device dev, const pi_graph& g, bool serialize, GraphPlan* plan) {
  const uint64_t freed = dev->buffers_freed.load();
  if (serialize == serialize_ && freed == freed_ && !signature_.empty() &&
      same_signature(g, signature_) && refresh(dev, g, plan))
    return true;
  signature_.clear();  // a plan_graph that throws leaves nothing to reuse
  plan_graph(dev, g, serialize, plan);
  remember(g, *plan, dev->features);
  serialize_ = serialize;
  freed_ = freed;
  epoch_ = next_epoch.fetch_add(1) + 1;
  auto put = [this](uint64_t w) { signature_.push_back(w); };
  put_graph(g, put);
  return false;
}

bool PlanReuse::refresh(pi_device dev, const pi_graph& g, GraphPlan* plan) const {
  if (plan_units(g, dev->features) != plan->units) return false;
  for (size_t k = 0; k < field_nodes_.size(); ++k) {
    OpPlan op;
    std::string why;
    if (!plan_node(g.nodes[field_nodes_[k]], dev->features, &op, &why) ||
        !same_op(op, field_ops_[k]))
      return false;
  }
  if (!refresh_sites(dev, g, plan)) return false;
  for (uint32_t i : field_dispatches_) {
    const DispatchPlan& d = plan->dispatches[i];
    const pi_node& n = g.nodes[d.first];
    if (n.op == PI_OP_FLASH_ATTN &&
        attn_vec(n, d.slots) != (std::strncmp(d.op.shader, "flash_attn_vec", 14) == 0))
      return false;
    if (!stage_clear(plan->dispatches, i)) return false;
  }
  return true;
}

// The sites' tensors, bindings and byte ranges from g. A moved tensor must
// keep its descriptor (buffer, window): only its offset within it is data.
bool PlanReuse::refresh_sites(pi_device dev, const pi_graph& g, GraphPlan* plan) const {
  for (const Site& s : sites_) {
    DispatchPlan& d = plan->dispatches[s.dispatch];
    const pi_tensor& t = tensor_at(g.nodes[s.node], s.tensor);
    if (s.range >= 0) d.ranges[s.range] = tensor_bytes(t);
    if (s.slot < 0) continue;
    Binding b;
    try {
      b = bind_tensor(dev, t, 4, s.node, "cache view");
    } catch (const VkError&) {
      return false;  // plan_graph reports it
    }
    Binding& old = d.slots[s.slot];
    if (b.buffer != old.buffer || b.desc_offset != old.desc_offset || b.range != old.range)
      return false;
    old.offset = b.offset;
    d.tensors[s.slot] = t;
  }
  return true;
}

// Where the plan holds each decode-field tensor: a dispatch's slot or byte
// range equal to it, among the dispatches of its node.
void PlanReuse::remember(const pi_graph& g, const GraphPlan& plan, const Features& features) {
  field_nodes_.clear();
  field_ops_.clear();
  sites_.clear();
  field_dispatches_.clear();
  for (uint32_t j = 0; j < g.n_nodes; ++j) {
    if (!has_decode_fields(g.nodes[j])) continue;
    OpPlan op;
    std::string why;
    plan_node(g.nodes[j], features, &op, &why);
    field_nodes_.push_back(j);
    field_ops_.push_back(op);
  }
  for (uint32_t i = 0; i < plan.dispatches.size(); ++i) {
    const DispatchPlan& d = plan.dispatches[i];
    const size_t before = sites_.size();
    for (uint32_t j = d.first; j < d.first + std::max(d.count, 1u) && j < g.n_nodes; ++j)
      add_sites(g, d, i, j);
    for (uint32_t j : d.folded)  // a product's epilogue: its cache write
      if (j != 0) add_sites(g, d, i, j);
    if (sites_.size() != before) field_dispatches_.push_back(i);
  }
}

// The sites of node j's decode-field tensors in dispatch i (d).
void PlanReuse::add_sites(const pi_graph& g, const DispatchPlan& d, uint32_t i, uint32_t j) {
  const pi_node& n = g.nodes[j];
  for (int t = 0; t < 5; ++t) {
    if (decode_fields(n, t) == 0 || (t < 4 && static_cast<uint32_t>(t) >= n.n_src)) continue;
    const pi_tensor& x = tensor_at(n, t);
    if (x.buffer == nullptr) continue;
    const auto tn = static_cast<uint8_t>(t);
    for (int s = 0; s < static_cast<int>(kParamTensors); ++s)
      if (fusion::same_tensor(d.tensors[s], x)) sites_.push_back({i, j, tn, int8_t(s), -1});
    const ByteRange r = tensor_bytes(x);
    for (int k = 0; k < d.n_reads + d.n_writes; ++k) {
      const ByteRange& q = d.ranges[k];
      if (q.buffer == r.buffer && q.lo == r.lo && q.hi == r.hi)
        sites_.push_back({i, j, tn, -1, int8_t(k)});
    }
  }
}

}  // namespace polyinfer::vk
