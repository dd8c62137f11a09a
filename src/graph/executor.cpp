#include "graph/executor.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "graph/scratch.hpp"
#include "polyinfer/error.hpp"

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
  return to_abi(graph, plan_, t);
}

pi_tensor GraphExecutor::to_abi(const Graph& graph, const MemoryPlan& plan, TensorId t) const {
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
    out.offset = plan.offset[g.base] + g.offset;
  }
  return out;
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

std::vector<GraphExecutor::Segment> GraphExecutor::lay_out(const Graph& graph,
                                                           const MemoryPlan& plan) const {
  std::vector<Segment> segs;
  const std::vector<int> seg = submit_segments(graph);
  const std::vector<bool> scratch = scratch_destinations(graph);
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const GraphNode& n = graph.nodes()[i];
    if (n.kind == NodeKind::kCopy) {
      Segment c;
      c.copy = true;
      c.device = graph.tensor(graph.tensor(n.src[0]).base).device;
      c.dst_device = graph.tensor(graph.tensor(n.dst).base).device;
      c.from = to_abi(graph, plan, n.src[0]);
      c.to = to_abi(graph, plan, n.dst);
      c.bytes = graph.nbytes(n.src[0]);
      segs.push_back(c);
      continue;
    }
    if (i == 0 || seg[i] != seg[i - 1]) {
      segs.emplace_back();
      segs.back().device = n.device;
    }
    pi_node node{};
    node.op = n.op;
    for (int s = 0; s < PI_MAX_SRC; ++s) {
      if (n.src[s] >= 0) {
        node.src[s] = to_abi(graph, plan, n.src[s]);
        node.n_src = static_cast<uint32_t>(s + 1);
      }
    }
    node.dst = to_abi(graph, plan, n.dst);
    std::copy(n.i.begin(), n.i.end(), node.i);
    std::copy(n.f.begin(), n.f.end(), node.f);
    node.flags = scratch[i] ? PI_NODE_SCRATCH : 0u;
    segs.back().nodes.push_back(node);
  }
  return segs;
}

void GraphExecutor::copy(const Segment& c) {
  const BackendDevice& src = *devices_[c.device];
  const BackendDevice& dst = *devices_[c.dst_device];
  if (const uint8_t* host = host_bytes(src, c.from)) {
    // Written from the CPU arena itself once its stream is done, with no
    // staging copy first: a 512-token prompt's 8 MB of llama-8b embeddings
    // took 2.1-2.3 ms through staging, 0.9-1.1 ms without (H200 host), the GPU
    // idle behind them.
    src.sync();
    dst.check(dst.vt().buffer_write(dst.stream(), c.to.buffer, c.to.offset, host, c.bytes),
              "copy in");
  } else {
    staging_.resize(c.bytes);
    // buffer_read waits for the source stream's earlier work (abi.h).
    src.check(
        src.vt().buffer_read(src.stream(), c.from.buffer, c.from.offset, staging_.data(), c.bytes),
        "copy out");
    dst.check(
        dst.vt().buffer_write(dst.stream(), c.to.buffer, c.to.offset, staging_.data(), c.bytes),
        "copy in");
  }
  busy_[c.dst_device] = true;
}

void GraphExecutor::run(const Graph& graph, std::span<const HostInput> inputs) {
  start(graph, plan_memory(graph, static_cast<int>(devices_.size())), inputs);
  finish();
}

bool GraphExecutor::fits(const MemoryPlan& plan) const {
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (arena(static_cast<int>(d)).size() < plan.arena_bytes[d]) return false;
  }
  return true;
}

void GraphExecutor::write_inputs(const Graph& graph, std::span<const HostInput> inputs) {
  for (const HostInput& in : inputs) {
    const pi_tensor t = to_abi(graph, in.id);
    const BackendDevice& dev = device_of(graph, in.id);
    dev.check(dev.vt().buffer_write(dev.stream(), t.buffer, t.offset, in.data, graph.nbytes(in.id)),
              "write input");
  }
}

void GraphExecutor::launch(const std::vector<Segment>& segs, const std::vector<bool>& prepared) {
  for (const Segment& seg : segs) {
    if (seg.copy) {
      copy(seg);
      continue;
    }
    const BackendDevice& dev = *devices_[seg.device];
    if (prepared[seg.device]) {
      dev.submit_prepared();
    } else {
      const pi_graph g{seg.nodes.data(), static_cast<uint32_t>(seg.nodes.size())};
      dev.submit(g);
    }
    busy_[seg.device] = true;
  }
}

void GraphExecutor::start(const Graph& graph, MemoryPlan plan, std::span<const HostInput> inputs) {
  prepared_.reset();
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
  write_inputs(graph, inputs);
  launch(lay_out(graph, plan_), std::vector<bool>(devices_.size(), false));
}

void GraphExecutor::prepare(const Graph& graph, const MemoryPlan& plan) {
  prepared_.reset();
  if (!fits(plan)) return;  // start() will grow an arena: new addresses
  Prepared p{plan, lay_out(graph, plan), std::vector<bool>(devices_.size(), false)};
  std::vector<int> runs(devices_.size(), 0);
  for (const Segment& seg : p.segments) runs[seg.device] += !seg.copy;
  // One prepared graph per stream: a device with two runs of nodes submits both.
  for (const Segment& seg : p.segments) {
    if (seg.copy || runs[seg.device] != 1) continue;
    const pi_graph g{seg.nodes.data(), static_cast<uint32_t>(seg.nodes.size())};
    p.ready[seg.device] = devices_[seg.device]->prepare(g);
  }
  prepared_ = std::move(p);
}

void GraphExecutor::start_prepared(const Graph& graph, std::span<const HostInput> inputs) {
  if (!prepared_) throw Error(ErrorCode::kInvalidArgument, "start_prepared: no graph prepared");
  Prepared p = std::move(*prepared_);
  prepared_.reset();
  plan_ = std::move(p.plan);
  write_inputs(graph, inputs);
  launch(p.segments, p.ready);
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

std::span<const uint8_t> GraphExecutor::read_back(const Graph& graph, TensorId t) {
  const uint64_t bytes = graph.nbytes(t);
  const BackendDevice& dev = device_of(graph, t);
  const BackendDevice* pin = dev.info().kind == PI_DEVICE_CPU ? nullptr : &dev;
  if (readback_.data() == nullptr || readback_.size() < bytes || readback_dev_ != pin) {
    readback_ = PinnedHost();  // free first: the old and new memory need not coexist
    readback_ =
        PinnedHost::allocate(pin ? std::span(&pin, 1) : std::span<const BackendDevice*>(), bytes);
    readback_dev_ = pin;
    if (readback_.data() == nullptr) {
      throw Error(ErrorCode::kBackend,
                  "no host memory for " + std::to_string(bytes) + " bytes of output");
    }
  }
  read(graph, t, readback_.data());
  return {static_cast<const uint8_t*>(readback_.data()), bytes};
}

}  // namespace polyinfer
