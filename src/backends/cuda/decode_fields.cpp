#include "backends/cuda/decode_fields.hpp"

#include <algorithm>

#include "backends/cuda/tensor_rules.hpp"
#include "backends/fusion_bytes.hpp"

namespace polyinfer::cuda {
namespace {

// The first position of view v (positions along dim 1) that may share a byte
// with [lo, hi), or n = v.ne[1] when none does. A position spans its other
// dims' bytes (fusion::byte_end with one position).
int64_t first_position_in(const pi_tensor& v, uint64_t lo, uint64_t hi) {
  const int64_t n = v.ne[1];
  const uint64_t step = v.nb[1];
  if (step == 0) return 0;
  pi_tensor one = v;
  one.ne[1] = 1;
  const uint64_t span = fusion::byte_end(one) - v.offset;
  // Position j covers [v.offset + j * step, + span): the first whose end
  // passes lo, if it starts below hi.
  const uint64_t first = v.offset + span > lo ? 0 : (lo - v.offset - span) / step + 1;
  if (first >= static_cast<uint64_t>(n) || v.offset + first * step >= hi) return n;
  return static_cast<int64_t>(first);
}

// Whether a node before `fa` in g writes a byte of t.
bool written_before(const pi_graph& g, uint32_t fa, const pi_tensor& t) {
  for (uint32_t i = 0; i < fa; ++i) {
    if (fusion::overlap(g.nodes[i].dst, t)) return true;
  }
  return false;
}

}  // namespace

int64_t kv_rows_unwritten(const pi_graph& g, uint32_t fa) {
  const pi_node& n = g.nodes[fa];
  int64_t rows = n.src[1].ne[1];
  for (uint32_t i = 0; i < fa; ++i) {
    const pi_tensor& w = g.nodes[i].dst;
    for (int s = 1; s <= 2; ++s) {
      const pi_tensor& v = n.src[s];
      if (w.buffer == nullptr || w.buffer != v.buffer) continue;
      rows = std::min(rows, first_position_in(v, w.offset, fusion::byte_end(w)));
    }
  }
  return rows;
}

DecodeFields plan_decode_fields(const pi_graph& g, const std::vector<Unit>& units, size_t capacity,
                                bool idle) {
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
      const pi_node& n = g.nodes[i];
      if (!flash_decode_node(n)) continue;
      take(i, n.src[1].ne[1]);
      f.values.push_back(idle ? kv_rows_unwritten(g, i) : 0);
      f.values.push_back(idle && !written_before(g, i, n.src[3]) ? 1 : 0);
    }
  }
  if (f.values.size() > capacity) {
    f.slot.assign(g.n_nodes, -1);
    f.values.clear();
  }
  return f;
}

}  // namespace polyinfer::cuda
