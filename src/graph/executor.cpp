#include "graph/executor.hpp"

#include <algorithm>
#include <utility>

namespace polyinfer {

GraphExecutor::GraphExecutor(std::vector<const BackendDevice*> devices)
    : devices_(std::move(devices)),
      arenas_(devices_.size()),
      host_arenas_(devices_.size()),
      busy_(devices_.size(), false) {
  for (const BackendDevice* d : devices_) {
    if (d->info().kind != PI_DEVICE_CPU) accelerators_.push_back(d);
  }
}

const DeviceBuffer& GraphExecutor::arena(int device) const {
  const DeviceBuffer& host = host_arenas_[device].buffer();
  return host.handle() ? host : arenas_[device];
}

void GraphExecutor::grow(size_t d, uint64_t size) {
  arenas_[d] = DeviceBuffer();  // free first: the old and new arena need not coexist
  host_arenas_[d] = HostArena();
  const pi_device_info& info = devices_[d]->info();
  if (info.kind == PI_DEVICE_CPU && info.host_visible && !accelerators_.empty()) {
    host_arenas_[d] = HostArena::allocate(*devices_[d], accelerators_, size);
    if (host_arenas_[d].pinned()) return;
    host_arenas_[d] = HostArena();  // no accelerator pins host memory: a plain arena
  }
  arenas_[d] = DeviceBuffer::allocate(*devices_[d], size);
}

const BackendDevice& GraphExecutor::device_of(const Graph& graph, TensorId t) const {
  return *devices_[graph.tensor(graph.tensor(t).base).device];
}

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
    out.buffer = arena(owner.device).handle();
    out.offset = plan_.offset[g.base] + g.offset;
  }
  return out;
}

void GraphExecutor::flush(int device) {
  if (pending_.empty()) return;
  const pi_graph g{pending_.data(), static_cast<uint32_t>(pending_.size())};
  devices_[device]->submit(g);
  busy_[device] = true;
  pending_.clear();
}

namespace {

// The host address of a CPU device's tensor, else nullptr. Only CPU devices:
// a GPU's host-visible memory may need more than its stream's end to be read.
const uint8_t* host_bytes(const BackendDevice& dev, const pi_tensor& t) {
  if (dev.info().kind != PI_DEVICE_CPU || !dev.info().host_visible) return nullptr;
  const auto* base = static_cast<const uint8_t*>(dev.vt().buffer_map(t.buffer));
  return base ? base + t.offset : nullptr;
}

}  // namespace

void GraphExecutor::copy(const Graph& graph, const GraphNode& n) {
  const pi_tensor from = to_abi(graph, n.src[0]), to = to_abi(graph, n.dst);
  const BackendDevice& src = device_of(graph, n.src[0]);
  const BackendDevice& dst = device_of(graph, n.dst);
  const uint64_t bytes = graph.nbytes(n.src[0]);
  if (const uint8_t* host = host_bytes(src, from)) {
    // Written from the CPU arena itself once its stream is done, with no
    // staging copy first: a 512-token prompt's 8 MB of llama-8b embeddings
    // took 2.1-2.3 ms through staging, 0.9-1.1 ms without (H200 host), the GPU
    // idle behind them.
    src.sync();
    dst.check(dst.vt().buffer_write(dst.stream(), to.buffer, to.offset, host, bytes), "copy in");
  } else {
    staging_.resize(bytes);
    // buffer_read waits for the source stream's earlier work (abi.h).
    src.check(src.vt().buffer_read(src.stream(), from.buffer, from.offset, staging_.data(), bytes),
              "copy out");
    dst.check(dst.vt().buffer_write(dst.stream(), to.buffer, to.offset, staging_.data(), bytes),
              "copy in");
  }
  busy_[graph.tensor(graph.tensor(n.dst).base).device] = true;
}

void GraphExecutor::run(const Graph& graph, std::span<const HostInput> inputs) {
  start(graph, plan_memory(graph, static_cast<int>(devices_.size())), inputs);
  finish();
}

void GraphExecutor::start(const Graph& graph, MemoryPlan plan, std::span<const HostInput> inputs) {
  plan_ = std::move(plan);
  for (size_t d = 0; d < devices_.size(); ++d) {
    const uint64_t have = arena(static_cast<int>(d)).size();
    if (have < plan_.arena_bytes[d]) {
      // Decode graphs grow by a few bytes per token (the mask): grow by half again,
      // in whole MiB, so that a GPU does not free and allocate (and a backend does
      // not re-record its graphs) on every token.
      constexpr uint64_t kMiB = 1ull << 20;
      const uint64_t want = std::max(plan_.arena_bytes[d], have * 3 / 2);
      grow(d, (want + kMiB - 1) / kMiB * kMiB);
    }
  }
  for (const HostInput& in : inputs) {
    const pi_tensor t = to_abi(graph, in.id);
    const BackendDevice& dev = device_of(graph, in.id);
    dev.check(dev.vt().buffer_write(dev.stream(), t.buffer, t.offset, in.data, graph.nbytes(in.id)),
              "write input");
  }
  pending_device_ = -1;
  for (const GraphNode& n : graph.nodes()) {
    if (n.device != pending_device_ || n.kind == NodeKind::kCopy) flush(pending_device_);
    pending_device_ = n.device;
    if (n.kind == NodeKind::kCopy) {
      copy(graph, n);
      continue;
    }
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
    pending_.push_back(node);
  }
  flush(pending_device_);
}

void GraphExecutor::finish() {
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (busy_[d]) devices_[d]->sync();
    busy_[d] = false;
  }
}

void GraphExecutor::read(const Graph& graph, TensorId t, void* dst) const {
  const pi_tensor a = to_abi(graph, t);
  const BackendDevice& dev = device_of(graph, t);
  dev.check(dev.vt().buffer_read(dev.stream(), a.buffer, a.offset, dst, graph.nbytes(t)),
            "read output");
}

}  // namespace polyinfer
