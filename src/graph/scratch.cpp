#include "graph/scratch.hpp"

#include <cstddef>

namespace polyinfer {

std::vector<int> submit_segments(const Graph& g) {
  std::vector<int> seg(g.nodes().size());
  int s = -1, device = -1;
  bool after_copy = true;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const GraphNode& n = g.nodes()[i];
    if (n.kind == NodeKind::kCopy) {
      seg[i] = ++s;
      after_copy = true;
      continue;
    }
    if (after_copy || n.device != device) ++s;
    after_copy = false;
    device = n.device;
    seg[i] = s;
  }
  return seg;
}

std::vector<bool> scratch_destinations(const Graph& g) {
  const std::vector<GraphTensor>& ts = g.tensors();
  const std::vector<GraphNode>& ns = g.nodes();
  std::vector<bool> kept(ts.size(), false);  // per owner
  for (size_t t = 0; t < ts.size(); ++t) {
    if (ts[t].output) kept[ts[t].base] = true;
    const bool owner = ts[t].base == static_cast<TensorId>(t);
    if (owner && ts[t].kind != StorageKind::kIntermediate) kept[t] = true;  // bound, input
  }
  const std::vector<int> seg = submit_segments(g);
  // Per owner: the segment of its last writer of the whole tensor. A write
  // through a view may leave bytes of an earlier segment's, which a reader
  // of the whole would read after that segment's graph.
  std::vector<int> written_in(ts.size(), -1);
  for (size_t i = 0; i < ns.size(); ++i) {
    const GraphNode& n = ns[i];
    for (TensorId s : n.src) {
      if (s < 0) continue;
      const TensorId owner = ts[s].base;
      if (n.kind == NodeKind::kCopy || written_in[owner] != seg[i]) kept[owner] = true;
    }
    if (ts[n.dst].base == n.dst) written_in[n.dst] = seg[i];
  }
  std::vector<bool> scratch(ns.size());
  for (size_t i = 0; i < ns.size(); ++i)
    scratch[i] = ns[i].kind == NodeKind::kOp && !kept[ts[ns[i].dst].base];
  return scratch;
}

}  // namespace polyinfer
