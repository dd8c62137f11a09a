#include "backends/cuda/graph_cache.hpp"

#include <cstring>

#include "backends/cuda/cuda_device.hpp"

namespace polyinfer::cuda {
namespace {

void put_tensor(std::vector<uint64_t>& k, const pi_tensor& t) {
  k.push_back(t.type);
  for (int d = 0; d < 4; ++d) k.push_back(static_cast<uint64_t>(t.ne[d]));
  for (int d = 0; d < 4; ++d) k.push_back(t.nb[d]);
  // The device address, not the handle: a freed handle's memory may come back
  // as another buffer's handle.
  k.push_back(t.buffer ? reinterpret_cast<uintptr_t>(t.buffer->ptr) : 0);
  k.push_back(t.offset);
}

}  // namespace

// Field by field: pi_node has padding bytes, whose values are not part of
// the graph.
GraphKeys graph_keys(const pi_graph& g) {
  GraphKeys k;
  k.topology.push_back(g.n_nodes);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    k.topology.push_back(n.op);
    k.topology.push_back(n.n_src);
    for (uint32_t s = 0; s < PI_MAX_SRC; ++s)
      k.topology.push_back(n.src[s].buffer ? n.src[s].type : ~0u);
    k.topology.push_back(n.dst.type);
    k.full.push_back(n.op);
    for (uint32_t s = 0; s < PI_MAX_SRC; ++s) put_tensor(k.full, n.src[s]);
    put_tensor(k.full, n.dst);
    for (int j = 0; j < 8; ++j) k.full.push_back(static_cast<uint32_t>(n.i[j]));
    for (int j = 0; j < 8; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &n.f[j], 4);
      k.full.push_back(bits);
    }
  }
  return k;
}

GraphCache::~GraphCache() {
  clear();
}

void GraphCache::clear() {
  for (Entry& e : entries_) cudaGraphExecDestroy(e.exec);
  entries_.clear();
}

GraphCache::Action GraphCache::lookup(const GraphKeys& keys, cudaGraphExec_t* exec) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->keys.full == keys.full) {
      entries_.splice(entries_.begin(), entries_, it);
      *exec = entries_.front().exec;
      ++replays_;
      return Action::kReplay;
    }
  }
  for (auto it = seen_.begin(); it != seen_.end(); ++it) {
    if (*it == keys.full) {
      seen_.erase(it);
      return Action::kCapture;
    }
  }
  seen_.push_front(keys.full);
  if (seen_.size() > kMaxEntries) seen_.pop_back();
  return Action::kEager;
}

cudaGraphExec_t GraphCache::install(const GraphKeys& keys, cudaGraph_t graph, cudaError_t* err) {
  *err = cudaSuccess;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->keys.topology != keys.topology) continue;
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(it->exec, graph, &info) == cudaSuccess) {
      it->keys = keys;
      entries_.splice(entries_.begin(), entries_, it);
      ++updates_;
      return entries_.front().exec;
    }
    cudaGetLastError();  // a failed update is not an error: instantiate anew
    cudaGraphExecDestroy(it->exec);
    entries_.erase(it);
    break;
  }
  cudaGraphExec_t exec = nullptr;
  *err = cudaGraphInstantiate(&exec, graph, 0);
  if (*err != cudaSuccess) return nullptr;
  entries_.push_front(Entry{keys, exec});
  if (entries_.size() > kMaxEntries) {
    cudaGraphExecDestroy(entries_.back().exec);
    entries_.pop_back();
  }
  return exec;
}

}  // namespace polyinfer::cuda
