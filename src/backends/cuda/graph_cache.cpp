#include "backends/cuda/graph_cache.hpp"

#include <algorithm>

namespace polyinfer::cuda {
namespace {

// Moves `key` to the front of a bounded most-recently-seen list; true when it
// was there already.
bool remember(std::list<std::vector<uint64_t>>& list, const std::vector<uint64_t>& key,
              size_t max) {
  const auto it = std::find(list.begin(), list.end(), key);
  const bool found = it != list.end();
  if (found) list.erase(it);
  list.push_front(key);
  if (list.size() > max) list.pop_back();
  return found;
}

bool same_node(const GraphKeys& a, const GraphKeys& b, uint32_t i) {
  const uint32_t from = i == 0 ? 0 : a.node_end[i - 1];
  return std::equal(a.full.begin() + from, a.full.begin() + a.node_end[i], b.full.begin() + from);
}

}  // namespace

GraphCache::~GraphCache() {
  clear();
}

void GraphCache::destroy(Entry& e) {
  if (e.exec) cudaGraphExecDestroy(e.exec);
  if (e.graph) cudaGraphDestroy(e.graph);
  e.exec = nullptr;
  e.graph = nullptr;
}

void GraphCache::clear() {
  for (Entry& e : entries_) destroy(e);
  entries_.clear();
}

// Same topology (so the same node layout), few changed nodes, each of them
// patchable.
bool GraphCache::patchable(const Entry& e, const GraphKeys& keys,
                           const std::vector<uint32_t>& leaders,
                           std::vector<uint32_t>* changed) const {
  if (e.keys.topology != keys.topology || e.keys.node_end != keys.node_end ||
      e.leaders != leaders) {
    return false;
  }
  const uint32_t n = static_cast<uint32_t>(keys.node_end.size());
  changed->clear();
  for (uint32_t i = 0; i < n; ++i) {
    if (same_node(e.keys, keys, i)) continue;
    const uint32_t unit = leaders[i];
    if (!changed->empty() && changed->back() == unit) continue;  // units are contiguous
    if (e.kernels[unit].empty() || changed->size() >= n / kMaxPatchShare) return false;
    changed->push_back(unit);
  }
  return true;
}

GraphCache::Lookup GraphCache::lookup(const GraphKeys& keys, const std::vector<uint32_t>& leaders) {
  Lookup r;
  bool topology_cached = false;
  const std::vector<uint64_t> prev_eager = std::move(last_eager_);
  last_eager_.clear();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->keys.full == keys.full) {
      entries_.splice(entries_.begin(), entries_, it);
      r.action = Action::kReplay;
      r.exec = entries_.front().exec;
      return r;
    }
  }
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->keys.topology != keys.topology) continue;
    topology_cached = true;
    if (patchable(*it, keys, leaders, &r.changed)) {
      entries_.splice(entries_.begin(), entries_, it);
      r.action = Action::kPatch;
      r.exec = entries_.front().exec;
      return r;
    }
  }
  const bool seen = remember(seen_, keys.full, kMaxEntries);
  const bool topology_seen = remember(topologies_, keys.topology, kMaxEntries);
  const bool stale = topology_cached && prev_eager == keys.topology;
  r.action =
      seen || stale || (topology_seen && !topology_cached) ? Action::kCapture : Action::kEager;
  if (r.action == Action::kEager) last_eager_ = keys.topology;
  return r;
}

cudaGraphExec_t GraphCache::install(const GraphKeys& keys, const std::vector<uint32_t>& leaders,
                                    cudaGraph_t graph, NodeKernels kernels, cudaError_t* err) {
  cudaGraphExec_t exec = nullptr;
  *err = cudaGraphInstantiate(&exec, graph, 0);
  if (*err != cudaSuccess) {
    cudaGraphDestroy(graph);
    return nullptr;
  }
  // The executable replaces one of the same topology (a patch would have
  // found it, had few nodes changed).
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->keys.topology == keys.topology) {
      destroy(*it);
      entries_.erase(it);
      break;
    }
  }
  entries_.push_front(Entry{keys, leaders, graph, exec, std::move(kernels)});
  if (entries_.size() > kMaxEntries) {
    destroy(entries_.back());
    entries_.pop_back();
  }
  return exec;
}

bool GraphCache::patch(const GraphKeys& keys, const std::vector<uint32_t>& changed,
                       const NodeKernels& fresh) {
  Entry& e = entries_.front();  // lookup() moved the patched entry there
  bool ok = fresh.size() == changed.size();
  for (size_t c = 0; ok && c < changed.size(); ++c) {
    const std::vector<cudaGraphNode_t>& old_nodes = e.kernels[changed[c]];
    ok = fresh[c].size() == old_nodes.size();
    for (size_t k = 0; ok && k < old_nodes.size(); ++k) {
      cudaKernelNodeParams was{}, now{};
      ok = cudaGraphKernelNodeGetParams(old_nodes[k], &was) == cudaSuccess &&
           cudaGraphKernelNodeGetParams(fresh[c][k], &now) == cudaSuccess && was.func == now.func &&
           cudaGraphExecKernelNodeSetParams(e.exec, old_nodes[k], &now) == cudaSuccess;
    }
  }
  if (!ok) {
    cudaGetLastError();
    destroy(e);
    entries_.pop_front();
    return false;
  }
  e.keys = keys;
  return true;
}

}  // namespace polyinfer::cuda
