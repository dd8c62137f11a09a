#include "graph/scheduler.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

// supports() is asked before any memory exists: present tensors get a
// non-NULL handle that is never dereferenced (abi.h), absent ones NULL.
const pi_buffer kPlaceholder = reinterpret_cast<pi_buffer>(uintptr_t{64});

pi_tensor probe_tensor(const GraphTensor& t) {
  pi_tensor p{};
  p.type = static_cast<uint32_t>(t.type);
  std::copy(t.ne.begin(), t.ne.end(), p.ne);
  std::copy(t.nb.begin(), t.nb.end(), p.nb);
  p.buffer = kPlaceholder;
  return p;
}

pi_node probe_node(const Graph& g, const GraphNode& n) {
  pi_node p{};
  p.op = n.op;
  for (int s = 0; s < PI_MAX_SRC; ++s) {
    if (n.src[s] < 0) continue;
    p.src[s] = probe_tensor(g.tensor(n.src[s]));
    p.n_src = static_cast<uint32_t>(s + 1);
  }
  p.dst = probe_tensor(g.tensor(n.dst));
  std::copy(n.i.begin(), n.i.end(), p.i);
  std::copy(n.f.begin(), n.f.end(), p.f);
  return p;
}

std::string types_of(const Graph& g, const GraphNode& n) {
  std::string s;
  for (TensorId t : n.src) {
    if (t < 0) continue;
    if (!s.empty()) s.append(",");
    s.append(type_name(g.tensor(t).type));
  }
  s.append("->");
  s.append(type_name(g.tensor(n.dst).type));
  return s;
}

double elements(const GraphTensor& t) {
  return static_cast<double>(t.ne[0]) * t.ne[1] * t.ne[2] * t.ne[3];
}

// Rules 1 and 2: the device of each node of the input graph.
class Placer {
 public:
  Placer(const Graph& g, std::span<const SchedDevice> devs, const ScheduleOptions& o)
      : g_(g), devs_(devs), o_(o), home_(g.tensors().size(), -1) {
    for (size_t t = 0; t < g.tensors().size(); ++t) {
      if (g.tensors()[t].kind == StorageKind::kBound) home_[t] = g.tensors()[t].device;
    }
  }

  std::vector<int> place(std::set<std::string>& notes) {
    const size_t n = g_.nodes().size();
    std::vector<int> wish(n);
    for (size_t i = 0; i < n; ++i) wish[i] = supported_wish(g_.nodes()[i], notes);
    std::vector<int> where(n);
    for (size_t i = 0; i < n;) {
      size_t end = i + 1;
      while (end < n && wish[end] == wish[i]) ++end;
      const int d =
          wish[i] != o_.cpu_device && too_small(i, end, wish[i], notes) ? o_.cpu_device : wish[i];
      for (; i < end; ++i) {
        where[i] = d;
        settle(g_.nodes()[i], d);
      }
    }
    return where;
  }

  const std::vector<int>& homes() const { return home_; }

 private:
  int supported_wish(const GraphNode& n, std::set<std::string>& notes) const {
    const int d = n.device;
    if (d == o_.cpu_device || devs_[d].supports(probe_node(g_, n))) return d;
    notes.insert(std::string(pi_op_name(n.op)) + " (" + types_of(g_, n) + ") runs on " +
                 devs_[o_.cpu_device].name + ": " + devs_[d].name + " does not support it");
    return o_.cpu_device;
  }

  // Rule 2 for the run of nodes [begin, end) wished on accelerator d.
  bool too_small(size_t begin, size_t end, int d, std::set<std::string>& notes) const {
    double flops = 0, copy_in = 0;
    std::set<TensorId> produced_here;  // and copied in: no copy needed (again)
    for (size_t i = begin; i < end; ++i) {
      const GraphNode& n = g_.nodes()[i];
      for (TensorId s : n.src) {
        if (s < 0) continue;
        const GraphTensor& owner = g_.tensor(g_.tensor(s).base);
        if (owner.kind == StorageKind::kBound && owner.device == d) return false;
        if (home_[g_.tensor(s).base] != d && produced_here.insert(g_.tensor(s).base).second)
          copy_in += static_cast<double>(span_bytes(g_.tensor(s)));  // once per tensor
      }
      const GraphTensor& dst_owner = g_.tensor(g_.tensor(n.dst).base);
      if (dst_owner.kind == StorageKind::kBound && dst_owner.device == d) return false;
      produced_here.insert(g_.tensor(n.dst).base);
      flops += node_flops(g_, n);
    }
    if (flops >= o_.min_flops_per_byte * copy_in) return false;
    notes.insert(std::to_string(end - begin) + " node(s) from " +
                 std::string(pi_op_name(g_.nodes()[begin].op)) + " run on " +
                 devs_[o_.cpu_device].name + " rather than " + devs_[d].name +
                 ": copying their inputs costs more than they compute (cost rule, "
                 "POLYINFER_OFFLOAD_MIN_INTENSITY)");
    return true;
  }

  void settle(const GraphNode& n, int d) {
    for (TensorId s : n.src) {
      if (s >= 0 && home_[g_.tensor(s).base] < 0) home_[g_.tensor(s).base] = d;  // host inputs
    }
    if (home_[g_.tensor(n.dst).base] < 0) home_[g_.tensor(n.dst).base] = d;
  }

  const Graph& g_;
  std::span<const SchedDevice> devs_;
  const ScheduleOptions& o_;
  std::vector<int> home_;  // per owner: its device, -1 until known
};

// Rule 3: the lowered graph, with replicas and copy nodes.
class Lowerer {
 public:
  explicit Lowerer(ScheduledGraph& out) : out_(out), g_(out.graph) {}

  void lower(const std::vector<GraphNode>& nodes, const std::vector<int>& where) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      GraphNode n = nodes[i];
      n.device = where[i];
      for (TensorId& s : n.src) {
        if (s >= 0) s = local(s, n.device);
      }
      const TensorId dst = n.dst, base = g_.tensor(dst).base;
      const bool foreign = g_.tensor(base).device != n.device;
      if (foreign) n.dst = fresh_replica(dst, n.device);  // holds the bytes it does not write
      invalidate(base);
      g_.mutable_nodes().push_back(n);
      if (foreign) {
        add_copy(n.dst, dst);  // write back
        replicas_.push_back({dst, base, n.device, n.dst});
      }
    }
  }

 private:
  struct Replica {
    TensorId src, base;
    int device;
    TensorId view;
  };

  TensorId local(TensorId t, int d) {
    if (g_.tensor(g_.tensor(t).base).device == d) return t;
    for (const Replica& r : replicas_) {
      if (r.src == t && r.device == d) return r.view;
    }
    const TensorId v = fresh_replica(t, d);
    replicas_.push_back({t, g_.tensor(t).base, d, v});
    return v;
  }

  // A replica of t's bytes on device d, filled by a copy node; returns a view of
  // it with t's type, shape and strides.
  TensorId fresh_replica(TensorId t, int d) {
    const GraphTensor tt = g_.tensor(t);
    const auto span = static_cast<int64_t>(span_bytes(tt));
    const TensorId owner = g_.scratch(GgmlType::I8, {span, 1, 1, 1}, d);
    add_copy(t, owner);
    return g_.view_as(owner, tt.type, tt.ne, tt.nb, 0);
  }

  // A copy node from the bytes `from` spans into those `to` spans.
  void add_copy(TensorId from, TensorId to) {
    const auto span = static_cast<int64_t>(span_bytes(g_.tensor(from)));
    const Shape ne{span, 1, 1, 1};
    const Strides nb = contiguous_strides(GgmlType::I8, ne);
    const TensorId src = g_.view_as(from, GgmlType::I8, ne, nb, 0);
    const TensorId dst = g_.view_as(to, GgmlType::I8, ne, nb, 0);
    GraphNode c{PI_OP_CPY, {src, -1, -1, -1}, dst};
    c.kind = NodeKind::kCopy;
    c.device = g_.tensor(g_.tensor(to).base).device;
    g_.mutable_nodes().push_back(c);
    out_.copy_bytes += static_cast<uint64_t>(span);
    ++out_.copies;
  }

  void invalidate(TensorId base) {
    std::erase_if(replicas_, [&](const Replica& r) { return r.base == base; });
  }

  ScheduledGraph& out_;
  Graph& g_;
  std::vector<Replica> replicas_;
};

}  // namespace

ScheduleOptions ScheduleOptions::from_environment(int cpu_device) {
  ScheduleOptions o;
  o.cpu_device = cpu_device;
  if (const char* v = std::getenv("POLYINFER_OFFLOAD_MIN_INTENSITY"); v && *v) {
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (*end != '\0' || !(x >= 0) || x > 1e300) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string("POLYINFER_OFFLOAD_MIN_INTENSITY must be a non-negative number "
                              "(flops per byte copied), not '") +
                      v + "'");
    }
    o.min_flops_per_byte = x;
  }
  return o;
}

double node_flops(const Graph& g, const GraphNode& n) {
  const GraphTensor& dst = g.tensor(n.dst);
  switch (n.op) {
    case PI_OP_MUL_MAT:
      return 2.0 * static_cast<double>(g.tensor(n.src[0]).ne[0]) * elements(dst);
    case PI_OP_FLASH_ATTN: {
      const GraphTensor& k = g.tensor(n.src[1]);
      return 4.0 * static_cast<double>(k.ne[1]) * elements(dst);  // Q·K and P·V per output
    }
    default:
      return 4.0 * elements(dst);  // a few operations per element
  }
}

ScheduledGraph schedule(const Graph& graph, std::span<const SchedDevice> devices,
                        const ScheduleOptions& options) {
  if (options.cpu_device < 0 || options.cpu_device >= static_cast<int>(devices.size()))
    throw Error(ErrorCode::kInvalidArgument, "schedule: no CPU device");
  std::set<std::string> notes;
  Placer placer(graph, devices, options);
  const std::vector<int> where = placer.place(notes);
  ScheduledGraph out;
  out.graph = graph;
  std::vector<GraphTensor>& tensors = out.graph.mutable_tensors();
  for (size_t t = 0; t < tensors.size(); ++t) {
    // Owners nothing touches stay where they are (device 0 when unknown).
    if (tensors[t].base == static_cast<TensorId>(t) && placer.homes()[t] >= 0)
      tensors[t].device = placer.homes()[t];
  }
  const std::vector<GraphNode> nodes = out.graph.nodes();
  out.graph.mutable_nodes().clear();
  Lowerer(out).lower(nodes, where);
  out.notes.assign(notes.begin(), notes.end());
  return out;
}

}  // namespace polyinfer
