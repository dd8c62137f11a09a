#include "backends/cuda/decode_fields.hpp"

#include "backends/cuda/tensor_rules.hpp"

namespace polyinfer::cuda {

DecodeFields plan_decode_fields(const pi_graph& g, const std::vector<Unit>& units,
                                size_t capacity) {
  DecodeFields f;
  f.slot.assign(g.n_nodes, -1);
  auto take = [&](uint32_t node, int64_t value) {
    f.slot[node] = static_cast<int32_t>(f.values.size());
    f.values.push_back(value);
  };
  for (const Unit& u : units) {
    if (u.kind == UnitKind::kRopeKv) {  // ROPE Q, ROPE K, CPY K, CPY V
      take(u.first + 2, static_cast<int64_t>(g.nodes[u.first + 2].dst.offset));
      take(u.first + 3, static_cast<int64_t>(g.nodes[u.first + 3].dst.offset));
      continue;
    }
    for (uint32_t i = u.first; i < u.first + u.count; ++i) {
      if (flash_decode_node(g.nodes[i])) take(i, g.nodes[i].src[1].ne[1]);
    }
  }
  if (f.values.size() > capacity) {
    f.slot.assign(g.n_nodes, -1);
    f.values.clear();
  }
  return f;
}

}  // namespace polyinfer::cuda
