#include "graph/executor.hpp"

#include <algorithm>

namespace polyinfer {

pi_tensor GraphExecutor::to_abi(const Graph& graph, TensorId t) const {
  const GraphTensor& g = graph.tensor(t);
  const GraphTensor& owner = graph.tensor(g.base);
  pi_tensor out{};
  out.type = static_cast<uint32_t>(g.type);
  std::copy(g.ne.begin(), g.ne.end(), out.ne);
  std::copy(g.nb.begin(), g.nb.end(), out.nb);
  if (owner.kind == StorageKind::kBound) {
    out.buffer = owner.buffer;
    out.offset = g.offset;
  } else {
    out.buffer = arena_.handle();
    out.offset = plan_.offset[g.base] + g.offset;
  }
  return out;
}

void GraphExecutor::run(const Graph& graph, std::span<const HostInput> inputs) {
  plan_ = plan_memory(graph);
  if (arena_.size() < plan_.arena_bytes) {
    arena_ = DeviceBuffer();  // free first: the old and new arena need not coexist
    arena_ = DeviceBuffer::allocate(dev_, plan_.arena_bytes);
  }
  for (const HostInput& in : inputs) {
    arena_.write(plan_.offset[graph.tensor(in.id).base] + graph.tensor(in.id).offset, in.data,
                 graph.nbytes(in.id));
  }
  nodes_.clear();
  for (const GraphNode& n : graph.nodes()) {
    pi_node node{};
    node.op = n.op;
    for (int s = 0; s < PI_MAX_SRC; ++s) {
      if (n.src[s] >= 0) {
        node.src[s] = to_abi(graph, n.src[s]);
        node.n_src = static_cast<uint32_t>(s + 1);
      }
    }
    node.dst = to_abi(graph, n.dst);
    std::copy(n.i.begin(), n.i.end(), node.i);
    std::copy(n.f.begin(), n.f.end(), node.f);
    nodes_.push_back(node);
  }
  const pi_graph g{nodes_.data(), static_cast<uint32_t>(nodes_.size())};
  dev_.submit(g);
  dev_.sync();
}

void GraphExecutor::read(const Graph& graph, TensorId t, void* dst) const {
  const pi_tensor a = to_abi(graph, t);
  dev_.check(dev_.vt().buffer_read(dev_.stream(), a.buffer, a.offset, dst, graph.nbytes(t)),
             "read output");
}

}  // namespace polyinfer
