#include "backends/cuda/decode_fields.hpp"

#include <algorithm>
#include <optional>

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

}  // namespace

AttnWrites::AttnWrites(const pi_graph& g) : g_(g) {
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    if (!flash_decode_node(n)) continue;
    for (int s = 1; s <= 2; ++s) {
      if (n.src[s].buffer) bufs_.push_back(n.src[s].buffer);
    }
    const auto same = [&](const Mask& m) { return fusion::same_tensor(m.view, n.src[3]); };
    if (std::none_of(masks_.begin(), masks_.end(), same)) masks_.push_back({n.src[3], g.n_nodes});
  }
  std::sort(bufs_.begin(), bufs_.end());
  bufs_.erase(std::unique(bufs_.begin(), bufs_.end()), bufs_.end());
  writers_.resize(bufs_.size());
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_tensor& w = g.nodes[i].dst;
    if (const auto at = std::lower_bound(bufs_.begin(), bufs_.end(), w.buffer);
        at != bufs_.end() && *at == w.buffer) {
      writers_[at - bufs_.begin()].push_back(i);
    }
    for (Mask& m : masks_) {
      if (m.first_writer == g.n_nodes && fusion::overlap(w, m.view)) m.first_writer = i;
    }
  }
}

int64_t AttnWrites::kv_rows_unwritten(uint32_t fa) const {
  const pi_node& n = g_.nodes[fa];
  int64_t rows = n.src[1].ne[1];
  for (int s = 1; s <= 2; ++s) {
    const pi_tensor& v = n.src[s];
    const auto at = std::lower_bound(bufs_.begin(), bufs_.end(), v.buffer);
    if (at == bufs_.end() || *at != v.buffer) continue;
    for (const uint32_t i : writers_[at - bufs_.begin()]) {
      if (i >= fa) break;
      const pi_tensor& w = g_.nodes[i].dst;
      rows = std::min(rows, first_position_in(v, w.offset, fusion::byte_end(w)));
    }
  }
  return rows;
}

bool AttnWrites::mask_written(uint32_t fa) const {
  for (const Mask& m : masks_) {
    if (fusion::same_tensor(m.view, g_.nodes[fa].src[3])) return m.first_writer < fa;
  }
  return true;
}

DecodeFields plan_decode_fields(const pi_graph& g, const std::vector<Unit>& units, size_t capacity,
                                bool idle) {
  DecodeFields f;
  f.slot.assign(g.n_nodes, -1);
  auto take = [&](uint32_t node, int64_t value) {
    f.slot[node] = static_cast<int32_t>(f.values.size());
    f.values.push_back(value);
  };
  std::optional<AttnWrites> writes;  // built at the first attention, when idle
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
      if (idle && !writes) writes.emplace(g);
      f.values.push_back(idle ? writes->kv_rows_unwritten(i) : 0);
      f.values.push_back(idle && !writes->mask_written(i) ? 1 : 0);
    }
  }
  if (f.values.size() > capacity) {
    f.slot.assign(g.n_nodes, -1);
    f.values.clear();
  }
  return f;
}

}  // namespace polyinfer::cuda
