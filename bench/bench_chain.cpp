// What a dependency between two nodes costs a backend, per op of a decode
// step: a graph of N nodes where each reads what the one before it wrote (a
// kernel boundary on CUDA, a pipeline barrier on Vulkan), against the same N
// nodes with no dependency between them (a Vulkan recording puts no barrier
// between them; CUDA still runs them one after another on its stream). Ops:
// ADD and RMS_NORM of 4,096 float32 values (a decode step's activation row),
// ADD of 1 Mi values, and MUL_MAT of a 4,096 x 4,096 Q4_0 matrix (each node
// its own, so that they do not stay in the L2 cache) by one column. Each
// graph is submitted 5 times before timing, so a backend that records or
// captures graphs replays them; then the median of 50 submit + sync. The
// per-node figures are (t(N nodes) - t(1 node)) / (N - 1). Reports speed,
// asserts nothing (figures go to BENCHMARKS.md); the values are zeros, which
// no kernel's time depends on.
//
// Usage: polyinfer-bench-chain BACKEND [DEVICE_OPTIONS]
//   (plugins are found as `polyinfer run` finds them: POLYINFER_BACKEND_PATH)
#include <cstdio>
#include <string>
#include <vector>

#include "abi_session.hpp"
#include "polyinfer/backend/abi.h"
#include "registry/backend_registry.hpp"

namespace {

polyinfer::bench::AbiSession g_abi;

void check(pi_status s, const char* what) {
  g_abi.check(s, what);
}

// A tensor of `type` with ne = {k, rows}, contiguous, at `offset` in b.
pi_tensor tensor(uint32_t type, pi_buffer b, uint64_t offset, int64_t k, int64_t rows = 1) {
  pi_tensor t{};
  t.type = type;
  t.ne[0] = k;
  t.ne[1] = rows;
  t.ne[2] = t.ne[3] = 1;
  t.nb[0] = type == 2 ? 18 : 4;  // Q4_0 blocks of 32 values in 18 bytes, or F32
  t.nb[1] = type == 2 ? static_cast<uint64_t>(k / 32) * 18 : 4 * static_cast<uint64_t>(k);
  t.nb[2] = t.nb[3] = t.nb[1] * static_cast<uint64_t>(rows);
  t.buffer = b;
  t.offset = offset;
  return t;
}

// One benchmark: its nodes read and write `buf`, of `bytes` bytes.
struct Case {
  const char* name;
  int nodes;
  uint64_t bytes;
  // Node i of the chained (reads node i-1's output) or independent graph.
  pi_node (*node)(pi_buffer buf, int i, bool chained);
};

constexpr int64_t kRow = 4096;
constexpr uint64_t kRowBytes = 4 * kRow;
constexpr int64_t kBig = int64_t{1} << 20;
constexpr uint64_t kQ4Bytes = kRow / 32 * 18 * kRow;
constexpr int kNodes = 64;
constexpr uint64_t kVectors = 2 * kNodes + 3;  // see vector()

// Vector v of n values: vector 0 is the ADD's second operand; chained nodes
// take turns with vectors 1 and 2, independent node i reads 2i + 3 and
// writes 2i + 4.
pi_tensor vector(pi_buffer b, int v, int64_t n) {
  return tensor(0, b, 4 * static_cast<uint64_t>(n) * static_cast<uint64_t>(v), n);
}
int in_vec(int i, bool chained) {
  return chained ? 1 + i % 2 : 2 * i + 3;
}
int out_vec(int i, bool chained) {
  return chained ? 1 + (i + 1) % 2 : 2 * i + 4;
}

pi_node add_node(pi_buffer b, int i, bool chained, int64_t n) {
  pi_node a{};
  a.op = PI_OP_ADD;
  a.n_src = 2;
  a.src[0] = vector(b, in_vec(i, chained), n);
  a.src[1] = vector(b, 0, n);
  a.dst = vector(b, out_vec(i, chained), n);
  return a;
}
pi_node add_row(pi_buffer b, int i, bool chained) {
  return add_node(b, i, chained, kRow);
}
pi_node add_big(pi_buffer b, int i, bool chained) {
  return add_node(b, i, chained, kBig);
}

pi_node rms_norm(pi_buffer b, int i, bool chained) {
  pi_node a{};
  a.op = PI_OP_RMS_NORM;
  a.n_src = 1;
  a.f[0] = 1e-5f;
  a.src[0] = vector(b, in_vec(i, chained), kRow);
  a.dst = vector(b, out_vec(i, chained), kRow);
  return a;
}

// Node i's own Q4_0 matrix lies after the vectors.
pi_node mul_mat_q4_0(pi_buffer b, int i, bool chained) {
  pi_node a{};
  a.op = PI_OP_MUL_MAT;
  a.n_src = 2;
  a.src[0] = tensor(2, b, kVectors * kRowBytes + kQ4Bytes * static_cast<uint64_t>(i), kRow, kRow);
  a.src[1] = vector(b, in_vec(i, chained), kRow);
  a.dst = vector(b, out_vec(i, chained), kRow);
  return a;
}

// Median seconds of submit + sync of the first `nodes` nodes.
double time_graph(pi_buffer buf, const Case& c, int nodes, bool chained) {
  std::vector<pi_node> g;
  for (int i = 0; i < nodes; ++i) g.push_back(c.node(buf, i, chained));
  return g_abi.median_submit(pi_graph{g.data(), static_cast<uint32_t>(g.size())}, 5, 50);
}

void run(const Case& c) {
  pi_buffer buf = nullptr;
  check(g_abi.vt->buffer_alloc(g_abi.dev, c.bytes, &buf), "buffer_alloc");
  const std::vector<uint8_t> zeros(c.bytes, 0);
  check(g_abi.vt->buffer_write(g_abi.stream, buf, 0, zeros.data(), c.bytes), "buffer_write");
  const double one = time_graph(buf, c, 1, true);
  const double chained = time_graph(buf, c, c.nodes, true);
  const double apart = time_graph(buf, c, c.nodes, false);
  const double per = 1e6 / (c.nodes - 1);
  std::printf("| %s | %d | %.1f | %.1f | %.2f | %.2f |\n", c.name, c.nodes, chained * 1e6,
              apart * 1e6, (chained - one) * per, (apart - one) * per);
  g_abi.vt->buffer_free(buf);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: polyinfer-bench-chain BACKEND [DEVICE_OPTIONS]\n");
    return 2;
  }
  const polyinfer::BackendRegistry registry(polyinfer::RegistryOptions::from_environment());
  const polyinfer::BackendEntry* b = registry.find(argv[1]);
  if (b == nullptr || !b->usable()) {
    std::fprintf(stderr, "polyinfer-bench-chain: backend '%s' is not usable here (%s)\n", argv[1],
                 b ? b->status_line().c_str() : "not found");
    return 2;
  }
  g_abi.vt = b->vtable;
  pi_device_info info{};
  check(g_abi.vt->device_info(0, &info), "device_info");
  check(g_abi.vt->device_open(0, argc > 2 ? argv[2] : nullptr, &g_abi.dev), "device_open");
  check(g_abi.vt->stream_create(g_abi.dev, &g_abi.stream), "stream_create");
  std::printf("%s: %s, driver %s%s%s\n\n", argv[1], info.name, info.driver_version,
              argc > 2 ? ", options " : "", argc > 2 ? argv[2] : "");
  std::printf(
      "| op | nodes | chained us | independent us | us per chained node | per independent node "
      "|\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  run({"ADD 4096", kNodes, kVectors * kRowBytes, add_row});
  run({"RMS_NORM 4096", kNodes, kVectors * kRowBytes, rms_norm});
  run({"ADD 1048576", kNodes, kVectors * 4 * kBig, add_big});
  run({"MUL_MAT Q4_0 4096x4096 x 1", kNodes, kVectors * kRowBytes + kNodes * kQ4Bytes,
       mul_mat_q4_0});
  g_abi.vt->stream_destroy(g_abi.stream);
  g_abi.vt->device_close(g_abi.dev);
  return 0;
}
