#include "graph/memory_plan.hpp"

#include <algorithm>
#include <iterator>
#include <map>

namespace polyinfer {
namespace {

uint64_t aligned(uint64_t n) {
  return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
}

// Last node index that touches each owner (through any view); outputs and
// inputs stay alive for the whole graph.
std::vector<int64_t> last_uses(const Graph& g) {
  const int64_t n_nodes = static_cast<int64_t>(g.nodes().size());
  std::vector<int64_t> last(g.tensors().size(), -1);
  for (int64_t i = 0; i < n_nodes; ++i) {
    const GraphNode& n = g.nodes()[i];
    for (TensorId s : n.src) {
      if (s >= 0) last[g.tensor(s).base] = i;
    }
    last[g.tensor(n.dst).base] = std::max(last[g.tensor(n.dst).base], i);
  }
  for (size_t t = 0; t < g.tensors().size(); ++t) {
    const GraphTensor& gt = g.tensors()[t];
    if (gt.output || gt.kind == StorageKind::kInput) last[gt.base] = n_nodes;
  }
  return last;
}

class FreeList {
 public:
  uint64_t take(uint64_t size) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < size) continue;
      const uint64_t at = it->first, left = it->second - size;
      free_.erase(it);
      if (left > 0) free_[at + size] = left;
      return at;
    }
    const uint64_t at = end_;
    end_ += size;
    return at;
  }
  void give(uint64_t at, uint64_t size) {
    auto it = free_.emplace(at, size).first;
    if (auto next = std::next(it); next != free_.end() && at + size == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  uint64_t end() const { return end_; }

 private:
  std::map<uint64_t, uint64_t> free_;  // offset -> size
  uint64_t end_ = 0;
};

}  // namespace

MemoryPlan plan_memory(const Graph& g, int n_devices) {
  MemoryPlan plan;
  plan.offset.assign(g.tensors().size(), 0);
  const std::vector<int64_t> last = last_uses(g);
  const auto n_nodes = static_cast<int64_t>(g.nodes().size());
  std::vector<std::vector<TensorId>> dying(g.nodes().size() + 1);
  std::vector<FreeList> arenas(static_cast<size_t>(n_devices));
  auto arena = [&](TensorId t) -> FreeList& { return arenas.at(g.tensor(t).device); };
  std::vector<bool> placed(g.tensors().size(), false);  // at its first writer
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const TensorId dst = g.tensor(g.nodes()[i].dst).base;  // a node may write through a view
    const GraphTensor& d = g.tensor(dst);
    if (d.kind == StorageKind::kIntermediate && last[dst] >= 0 && !placed[dst]) {
      placed[dst] = true;
      plan.offset[dst] = arena(dst).take(aligned(g.nbytes(dst)));
      const int64_t free_at = std::min(last[dst] + kFuseWindow - 1, n_nodes);
      dying[static_cast<size_t>(free_at)].push_back(dst);
    }
    for (TensorId t : dying[i]) arena(t).give(plan.offset[t], aligned(g.nbytes(t)));
  }
  // Inputs go past every intermediate, each in a slot rounded up to
  // kInputAlign: the attention mask grows by a position every decode step,
  // and at the front it would move every intermediate each time its size
  // crossed kArenaAlign (every 16 positions), so that a backend caching work
  // by device address (CUDA graphs, recorded Vulkan command buffers) captured
  // the step again instead of replaying it.
  std::vector<uint64_t> input_at;
  for (const FreeList& a : arenas) input_at.push_back(a.end());
  for (size_t t = 0; t < g.tensors().size(); ++t) {
    const auto id = static_cast<TensorId>(t);
    if (g.tensors()[t].kind != StorageKind::kInput) continue;
    uint64_t& at = input_at.at(g.tensor(id).device);
    plan.offset[t] = at;
    at += (g.nbytes(id) + kInputAlign - 1) / kInputAlign * kInputAlign;
  }
  for (uint64_t end : input_at) plan.arena_bytes.push_back(std::max<uint64_t>(end, kArenaAlign));
  return plan;
}

}  // namespace polyinfer
