// The scheduler (graph/scheduler.hpp): ops a device refuses run on the CPU, the
// cost rule keeps tiny work near its data, and the copies it inserts make a
// graph spread over two devices compute exactly what it computes on one.
// Both "devices" are CPU backend devices (separate arenas, so a missing copy
// reads memory nobody wrote); the first refuses some ops by a fake supports().
// The executor's CPU arena beside an accelerator is page-locked by it
// (graph/host_arena.hpp): a CPU device that reports itself a GPU and records
// what it wraps stands in for one; it also keeps the graphs the executor
// prepares ahead (GraphExecutor::prepare) and runs them when asked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "backend/device.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "graph/executor.hpp"
#include "graph/scheduler.hpp"
#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

constexpr int kAcc = 0, kCpu = 1;

std::vector<SchedDevice> devices(std::set<pi_op> refused) {
  return {{"acc:0", [refused](const pi_node& n) { return !refused.count(pi_op(n.op)); }},
          {"cpu:0", [](const pi_node&) { return true; }}};
}

ScheduleOptions options(double min_flops_per_byte = 8.0) {
  ScheduleOptions o;
  o.cpu_device = kCpu;
  o.min_flops_per_byte = min_flops_per_byte;
  return o;
}

// x -> rms_norm -> mul(w) -> [F16 copy into a bound "cache"] -> mul_mat(W) -> silu ->
// add -> out, with the weights and the cache bound on the accelerator.
struct Net {
  Graph g;
  TensorId x, out, cache;
};

Net build_net(std::vector<float>& store, std::vector<uint16_t>& cache, int64_t k, int64_t n,
              int64_t m) {
  Net net;
  Graph& g = net.g;
  auto* buf = reinterpret_cast<pi_buffer>(store.data());
  const TensorId norm_w = g.bound(GgmlType::F32, {k, 1, 1, 1}, buf, 0, kAcc);
  const TensorId w = g.bound(GgmlType::F32, {k, n, 1, 1}, buf, k * 4, kAcc);
  net.cache =
      g.bound(GgmlType::F16, {k, m, 1, 1}, reinterpret_cast<pi_buffer>(cache.data()), 0, kAcc);
  net.x = g.input(GgmlType::F32, {k, m, 1, 1});
  g.set_device(kAcc);
  const float eps[] = {1e-5f};
  const TensorId s0[] = {net.x};
  const TensorId nx = g.op(PI_OP_RMS_NORM, s0, GgmlType::F32, {k, m, 1, 1}, {}, eps);
  const TensorId s1[] = {nx, norm_w};
  const TensorId mx = g.op(PI_OP_MUL, s1, GgmlType::F32, {k, m, 1, 1});
  const TensorId s2[] = {mx};
  g.op_into(PI_OP_CPY, s2, net.cache);
  const TensorId s3[] = {w, mx};
  const TensorId y = g.op(PI_OP_MUL_MAT, s3, GgmlType::F32, {n, m, 1, 1});
  const TensorId s4[] = {y};
  const TensorId a = g.op(PI_OP_SILU, s4, GgmlType::F32, {n, m, 1, 1});
  const TensorId s5[] = {a, y};
  net.out = g.op(PI_OP_ADD, s5, GgmlType::F32, {n, m, 1, 1});
  g.mark_output(net.out);
  return net;
}

struct Result {
  std::vector<float> out;
  std::vector<uint16_t> cache;
};

// The stand-in accelerator: the CPU backend, reporting a GPU, recording the
// host memory it wraps and each wrap's release.
struct Pins {
  std::vector<std::pair<void*, uint64_t>> wrapped;
  int released = 0;
};
Pins g_pins;

pi_status pinning_info(int index, pi_device_info* out) {
  const pi_status st = polyinfer_cpu_backend_entry()->device_info(index, out);
  out->kind = PI_DEVICE_GPU;
  out->host_visible = 0;
  return st;
}

pi_status pinning_wrap(pi_device, void* ptr, uint64_t size, pi_buffer* out) {
  g_pins.wrapped.emplace_back(ptr, size);
  *out = static_cast<pi_buffer>(ptr);
  return PI_OK;
}

void pinning_free(pi_buffer buf) {
  for (const auto& [ptr, size] : g_pins.wrapped) {
    if (static_cast<void*>(buf) == ptr) {
      ++g_pins.released;
      return;
    }
  }
  polyinfer_cpu_backend_entry()->buffer_free(buf);
}

// The stand-in also has graph_prepare (abi.h): it keeps the prepared graph
// and runs it on graph_submit_prepared.
struct Prep {
  pi_graph graph{};
  int prepares = 0, prepared_submits = 0;
};
Prep g_prep;

pi_status keep_prepared(pi_stream, const pi_graph* g) {
  g_prep.graph = *g;
  ++g_prep.prepares;
  return PI_OK;
}

pi_status submit_kept(pi_stream s) {
  if (g_prep.graph.nodes == nullptr) return PI_ERR_INVALID;
  ++g_prep.prepared_submits;
  const pi_graph g = std::exchange(g_prep.graph, pi_graph{});
  return polyinfer_cpu_backend_entry()->graph_submit(s, &g);
}

const pi_backend_vtable& pinning_backend() {
  static const pi_backend_vtable vt = [] {
    pi_backend_vtable v = *polyinfer_cpu_backend_entry();
    v.device_info = pinning_info;
    v.buffer_wrap_host = pinning_wrap;
    v.buffer_free = pinning_free;
    v.graph_prepare = keep_prepared;
    v.graph_submit_prepared = submit_kept;
    return v;
  }();
  return vt;
}

// The accelerator (from `acc`, the CPU backend by default) and the CPU, and an
// executor over both that keeps its arenas between runs.
struct Rig {
  explicit Rig(const pi_backend_vtable* acc = nullptr)
      : a(acc ? *acc : *polyinfer_cpu_backend_entry(), 0, "threads=2"),
        b(*polyinfer_cpu_backend_entry(), 0, "threads=1"),
        exec({&a, &b}) {}
  BackendDevice a, b;
  GraphExecutor exec;
};

// Runs the net over m tokens on the rig as scheduled; weights and cache in host
// memory (the CPU backend's buffers are host pointers). With `back`, also
// reads the output through GraphExecutor::read_back. With `prepare`, through
// GraphExecutor::prepare and start_prepared, where prepare takes it.
Result run_on(Rig& rig, const std::set<pi_op>& refused, double min_flops_per_byte,
              ScheduledGraph* seen, int64_t m = 3, std::span<const uint8_t>* back = nullptr,
              bool prepare = false) {
  const int64_t k = 64, n = 48;
  std::mt19937 rng(1234 + static_cast<unsigned>(m));  // other values for another m
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> store(static_cast<size_t>(k + k * n)), x(static_cast<size_t>(k * m));
  for (float& v : store) v = u(rng);
  for (float& v : x) v = u(rng);
  Result r{std::vector<float>(static_cast<size_t>(n * m), NAN),
           std::vector<uint16_t>(static_cast<size_t>(k * m), 0x7e00)};  // poisoned
  Net net = build_net(store, r.cache, k, n, m);
  ScheduledGraph sg = schedule(net.g, devices(refused), options(min_flops_per_byte));
  const HostInput in[] = {{net.x, x.data()}};
  const MemoryPlan plan = plan_memory(sg.graph, 2);
  if (prepare) rig.exec.prepare(sg.graph, plan);
  if (prepare && rig.exec.prepared())
    rig.exec.start_prepared(sg.graph, in);
  else
    rig.exec.start(sg.graph, plan, in);
  rig.exec.finish();
  rig.exec.read(sg.graph, net.out, r.out.data());
  if (back) *back = rig.exec.read_back(sg.graph, net.out);
  if (seen) *seen = std::move(sg);
  return r;
}

Result run_net(const std::set<pi_op>& refused, double min_flops_per_byte, ScheduledGraph* seen,
               const pi_backend_vtable* acc = nullptr) {
  Rig rig(acc);
  return run_on(rig, refused, min_flops_per_byte, seen);
}

int nodes_on(const ScheduledGraph& s, int device, NodeKind kind) {
  int count = 0;
  for (const GraphNode& n : s.graph.nodes()) count += n.device == device && n.kind == kind;
  return count;
}

TEST(Scheduler, EverythingSupportedStaysOnTheAcceleratorWithoutCopiesOfWeights) {
  ScheduledGraph s;
  run_net({}, 8.0, &s);
  EXPECT_EQ(nodes_on(s, kCpu, NodeKind::kOp), 0);
  EXPECT_EQ(s.copies, 0);  // the input is written where its first reader runs
  EXPECT_TRUE(s.notes.empty());
}

TEST(Scheduler, RefusedOpsRunOnTheCpuWithANoteAndTheSameResult) {
  const Result want = run_net({}, 8.0, nullptr);
  for (const std::set<pi_op>& refused : std::vector<std::set<pi_op>>{
           {PI_OP_SILU}, {PI_OP_MUL_MAT}, {PI_OP_CPY}, {PI_OP_RMS_NORM, PI_OP_ADD}}) {
    ScheduledGraph s;
    const Result got = run_net(refused, 8.0, &s);
    EXPECT_EQ(got.out, want.out);
    EXPECT_EQ(got.cache, want.cache);
    EXPECT_GT(s.copies, 0);
    int refusals = 0;
    for (const std::string& n : s.notes) refusals += n.find("acc:0 does not support it") != n.npos;
    EXPECT_EQ(refusals, static_cast<int>(refused.size()));
    EXPECT_GE(nodes_on(s, kCpu, NodeKind::kOp), static_cast<int>(refused.size()));
  }
}

TEST(Scheduler, CostRuleKeepsTinyWorkOnTheCpu) {
  // MUL_MAT refused: SILU + ADD then sit alone on the accelerator with their input on
  // the CPU; 8 flops per copied byte is more than they do, so they stay on the CPU.
  ScheduledGraph s;
  run_net({PI_OP_MUL_MAT}, 8.0, &s);
  bool rule = false;
  for (const std::string& n : s.notes) rule |= n.find("cost rule") != std::string::npos;
  EXPECT_TRUE(rule);
  const int cpu_ops_with_rule = nodes_on(s, kCpu, NodeKind::kOp);
  // Threshold 0: every node the accelerator supports goes there.
  run_net({PI_OP_MUL_MAT}, 0.0, &s);
  EXPECT_LT(nodes_on(s, kCpu, NodeKind::kOp), cpu_ops_with_rule);
}

// SILU refused: the CPU runs it in its arena, which the accelerator page-locks;
// a larger graph grows the arena (the old one's pin released before its memory
// is freed: HostArena's move), and the executor's end releases the last pin.
// The results are those of two plain CPU devices.
TEST(Scheduler, AnAcceleratorPinsTheCpuArena) {
  g_pins = Pins{};
  Rig plain;
  std::optional<Rig> pinning(std::in_place, &pinning_backend());
  for (const int64_t m : {3, 4000}) {  // 4,000: past the first arena's whole MiB
    ScheduledGraph s;
    const Result want = run_on(plain, {PI_OP_SILU}, 0.0, nullptr, m);
    const Result got = run_on(*pinning, {PI_OP_SILU}, 0.0, &s, m);
    EXPECT_EQ(got.out, want.out) << m << " tokens";
    EXPECT_EQ(got.cache, want.cache) << m << " tokens";
    EXPECT_GT(nodes_on(s, kCpu, NodeKind::kOp), 0);
  }
  ASSERT_EQ(g_pins.wrapped.size(), 2u);  // sized by the first graph, then grown
  EXPECT_EQ(g_pins.released, 1);
  for (const auto& [ptr, size] : g_pins.wrapped) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 4096, 0u);
    EXPECT_GT(size, 0u);
  }
  EXPECT_GT(g_pins.wrapped[1].second, g_pins.wrapped[0].second);
  pinning.reset();
  EXPECT_EQ(g_pins.released, 2);
}

// read_back (a decode step's logits): the output's bytes in host memory that
// the output's device page-locks once and keeps; an output on the CPU is read
// into memory no device wraps.
TEST(Scheduler, ReadBackUsesMemoryTheOutputsDevicePins) {
  g_pins = Pins{};
  Rig rig(&pinning_backend());
  std::span<const uint8_t> first, back;
  for (int i = 0; i < 2; ++i) {
    const Result r = run_on(rig, {}, 8.0, nullptr, 3, &back);
    ASSERT_EQ(back.size(), r.out.size() * sizeof(float));
    EXPECT_EQ(std::memcmp(back.data(), r.out.data(), back.size()), 0);
    if (i == 0) first = back;
  }
  EXPECT_EQ(back.data(), first.data());  // kept, not allocated again
  EXPECT_EQ(reinterpret_cast<uintptr_t>(back.data()) % 4096, 0u);
  // Wraps of p recorded from the from-th on (freed memory may come back at an
  // address wrapped before).
  auto pins_of = [](const uint8_t* p, size_t from) {
    int pins = 0;
    for (size_t i = from; i < g_pins.wrapped.size(); ++i) pins += g_pins.wrapped[i].first == p;
    return pins;
  };
  EXPECT_EQ(pins_of(back.data(), 0), 1);
  const size_t before = g_pins.wrapped.size();
  ScheduledGraph s;
  const Result r = run_on(rig, {PI_OP_ADD}, 0.0, &s, 3, &back);  // the output on the CPU
  ASSERT_EQ(s.graph.nodes().back().device, kCpu);
  EXPECT_EQ(std::memcmp(back.data(), r.out.data(), back.size()), 0);
  EXPECT_EQ(pins_of(back.data(), before), 0);
}

// A graph prepared while the devices hold the last one's arena (a decode
// step's next graph) runs through the backend's graph_submit_prepared and
// computes what start() computes; prepare() declines a graph that needs a
// larger arena (start() would move it), and start() drops what was prepared.
TEST(Scheduler, APreparedGraphRunsAsAStartedOne) {
  g_prep = Prep{};
  Rig plain, rig(&pinning_backend());
  ScheduledGraph s;
  run_on(rig, {}, 8.0, &s, 3, nullptr, true);  // no arena yet: not prepared
  EXPECT_EQ(g_prep.prepares, 0);
  for (const int64_t m : {3, 2}) {
    const Result want = run_on(plain, {}, 8.0, nullptr, m);
    const Result got = run_on(rig, {}, 8.0, nullptr, m, nullptr, true);
    EXPECT_EQ(got.out, want.out) << m << " tokens";
    EXPECT_EQ(got.cache, want.cache) << m << " tokens";
  }
  EXPECT_EQ(g_prep.prepares, 2);
  EXPECT_EQ(g_prep.prepared_submits, 2);
  rig.exec.prepare(s.graph, plan_memory(s.graph, 2));
  ASSERT_TRUE(rig.exec.prepared());
  const Result want = run_on(plain, {}, 8.0, nullptr, 2);
  const Result got = run_on(rig, {}, 8.0, nullptr, 2);  // start(): drops it
  EXPECT_EQ(got.out, want.out);
  EXPECT_FALSE(rig.exec.prepared());
  EXPECT_EQ(g_prep.prepared_submits, 2);
  EXPECT_THROW(rig.exec.start_prepared(s.graph, {}), Error);
}

// A stand-in accelerator that records each submitted node's op and flags.
std::vector<std::pair<uint32_t, uint32_t>> g_submitted;

pi_status record_submit(pi_stream s, const pi_graph* g) {
  for (uint32_t i = 0; i < g->n_nodes; ++i)
    g_submitted.emplace_back(g->nodes[i].op, g->nodes[i].flags);
  return polyinfer_cpu_backend_entry()->graph_submit(s, g);
}

const pi_backend_vtable& recording_backend() {
  static const pi_backend_vtable vt = [] {
    pi_backend_vtable v = *polyinfer_cpu_backend_entry();
    v.graph_submit = record_submit;
    return v;
  }();
  return vt;
}

// The flags the accelerator's nodes of the net came with, by op.
std::vector<std::pair<uint32_t, uint32_t>> submitted_flags(const std::set<pi_op>& refused) {
  g_submitted.clear();
  run_net(refused, 0.0, nullptr, &recording_backend());
  return g_submitted;
}

// The executor marks PI_NODE_SCRATCH (graph/scratch.hpp) on the accelerator's
// intermediates that its own graph reads, not on the output, the cache write,
// or a tensor copied to the CPU.
TEST(Scheduler, ExecutorMarksScratchDestinations) {
  using P = std::pair<uint32_t, uint32_t>;
  const uint32_t kS = PI_NODE_SCRATCH;
  EXPECT_EQ(submitted_flags({}), (std::vector<P>{{PI_OP_RMS_NORM, kS},
                                                 {PI_OP_MUL, kS},
                                                 {PI_OP_CPY, 0},
                                                 {PI_OP_MUL_MAT, kS},
                                                 {PI_OP_SILU, kS},
                                                 {PI_OP_ADD, 0}}));
  // MUL_MAT on the CPU: the MUL's output is copied there.
  const std::vector<P> apart = submitted_flags({PI_OP_MUL_MAT});
  ASSERT_GE(apart.size(), 3u);
  EXPECT_EQ(apart[0], (P{PI_OP_RMS_NORM, kS}));
  EXPECT_EQ(apart[1], (P{PI_OP_MUL, 0}));
}

TEST(Scheduler, IntensityComesFromTheEnvironment) {
  setenv("POLYINFER_OFFLOAD_MIN_INTENSITY", "2.5", 1);
  EXPECT_EQ(ScheduleOptions::from_environment(1).min_flops_per_byte, 2.5);
  setenv("POLYINFER_OFFLOAD_MIN_INTENSITY", "fast", 1);
  EXPECT_THROW(ScheduleOptions::from_environment(1), Error);
  setenv("POLYINFER_OFFLOAD_MIN_INTENSITY", "-1", 1);
  EXPECT_THROW(ScheduleOptions::from_environment(1), Error);
  unsetenv("POLYINFER_OFFLOAD_MIN_INTENSITY");
  EXPECT_EQ(ScheduleOptions::from_environment(1).min_flops_per_byte, 8.0);
}

}  // namespace
}  // namespace polyinfer
