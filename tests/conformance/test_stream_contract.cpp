// What the scheduler needs from a backend's buffers and streams, beyond one
// node per graph: writes and reads at arbitrary byte offsets, many buffers
// alive at once, many graphs queued on one stream without a sync between
// them, and buffer_write's promise that `src` may be reused as soon as it
// returns. Values are random small integers, so every sum is exact in float32
// and the results must match the float64 reference exactly.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "backend_under_test.hpp"
#include "random_data.hpp"

namespace polyinfer::conformance {
namespace {

class StreamContract : public ConformanceTest {};

pi_tensor f32_view(const DeviceBuffer& buf, uint64_t offset, std::initializer_list<int64_t> ne,
                   std::initializer_list<uint64_t> nb) {
  pi_tensor t{};
  t.type = 0;
  std::copy(ne.begin(), ne.end(), t.ne);
  std::copy(nb.begin(), nb.end(), t.nb);
  t.buffer = buf.handle();
  t.offset = offset;
  return t;
}

pi_tensor f32_vector(const DeviceBuffer& buf, uint64_t offset, int64_t n) {
  const uint64_t row = 4 * static_cast<uint64_t>(n);
  return f32_view(buf, offset, {n, 1, 1, 1}, {4, row, row, row});
}

TEST_F(StreamContract, OffsetsManyBuffersAndQueuedGraphs) {
  BackendDevice& dev = backend().device();
  Rng rng(case_seed("STREAM/queued_graphs"));
  constexpr int kBuffers = 24, kRounds = 150;
  constexpr int64_t kN = 333;    // no tile divides it
  const uint64_t kOff = 4 * 37;  // data sits at a byte offset, poison around it
  const uint64_t kBytes = kOff + 4 * kN + 64;

  std::vector<DeviceBuffer> bufs;
  std::vector<std::vector<double>> want(kBuffers, std::vector<double>(kN));
  std::vector<float> host(kN);
  const std::vector<uint8_t> poison(kBytes, 0xFF);
  for (int b = 0; b < kBuffers; ++b) {
    bufs.push_back(DeviceBuffer::allocate(dev, kBytes));
    bufs.back().write(0, poison.data(), kBytes);
    for (int64_t i = 0; i < kN; ++i) {
      host[i] = static_cast<float>(static_cast<int>(rng() % 2001) - 1000);
      want[b][i] = host[i];
    }
    bufs.back().write(kOff, host.data(), 4 * kN);
    // write() may return before the copy runs; the source must be reusable at once.
    std::fill(host.begin(), host.end(), -7.0f);
  }

  // Each round: acc[b] += acc[c] (one graph), and every 10th round an upload
  // overwrites a buffer behind the queued graphs; never a sync in between.
  for (int r = 0; r < kRounds; ++r) {
    const int b = static_cast<int>(rng() % kBuffers), c = static_cast<int>(rng() % kBuffers);
    if (b == c) continue;
    pi_node node{};
    node.op = PI_OP_ADD;
    node.n_src = 2;
    node.src[0] = f32_vector(bufs[b], kOff, kN);
    node.src[1] = f32_vector(bufs[c], kOff, kN);
    node.dst = node.src[0];
    const pi_graph g{&node, 1};
    dev.submit(g);
    for (int64_t i = 0; i < kN; ++i) want[b][i] += want[c][i];
    if (r % 10 == 9) {
      const int u = static_cast<int>(rng() % kBuffers);
      for (int64_t i = 0; i < kN; ++i) {
        host[i] = static_cast<float>(static_cast<int>(rng() % 201) - 100);
        want[u][i] = host[i];
      }
      bufs[u].write(kOff, host.data(), 4 * kN);
      std::fill(host.begin(), host.end(), -7.0f);
    }
  }

  // Reads return after earlier work on the stream: no sync() before them. Read
  // in two pieces at odd offsets, and the poison around the data.
  for (int b = 0; b < kBuffers; ++b) {
    std::vector<uint8_t> got(kBytes, 0);
    bufs[b].read(0, got.data(), 101);
    bufs[b].read(101, got.data() + 101, kBytes - 101);
    for (uint64_t i = 0; i < kOff; ++i) ASSERT_EQ(got[i], 0xFF) << "buffer " << b << " byte " << i;
    for (uint64_t i = kOff + 4 * kN; i < kBytes; ++i)
      ASSERT_EQ(got[i], 0xFF) << "buffer " << b << " byte " << i;
    for (int64_t i = 0; i < kN; ++i) {
      float v;
      std::memcpy(&v, got.data() + kOff + 4 * i, 4);
      ASSERT_EQ(static_cast<double>(v), want[b][i]) << "buffer " << b << " element " << i;
    }
  }
}

// One graph of many nodes, each reading the previous node's output, submitted
// several times: a backend that records graphs must replay them, not reuse
// stale results.
TEST_F(StreamContract, ChainedNodesReplayed) {
  BackendDevice& dev = backend().device();
  Rng rng(case_seed("STREAM/chained_replay"));
  constexpr int64_t kN = 97;
  constexpr int kNodes = 40, kSubmits = 5;
  DeviceBuffer x = DeviceBuffer::allocate(dev, 4 * kN + 8);
  DeviceBuffer one = DeviceBuffer::allocate(dev, 4 * kN);
  std::vector<float> host(kN), ones(kN);
  std::vector<double> want(kN);
  for (int64_t i = 0; i < kN; ++i) {
    host[i] = static_cast<float>(static_cast<int>(rng() % 101) - 50);
    want[i] = host[i];
    ones[i] = static_cast<float>(1 + rng() % 3);
  }
  x.write(8, host.data(), 4 * kN);
  one.write(0, ones.data(), 4 * kN);
  std::vector<pi_node> nodes(kNodes);
  for (int k = 0; k < kNodes; ++k) {
    pi_node& n = nodes[k];
    n.op = k % 4 == 3 ? PI_OP_SCALE : PI_OP_ADD;
    n.n_src = n.op == PI_OP_ADD ? 2 : 1;
    n.src[0] = f32_vector(x, 8, kN);
    if (n.op == PI_OP_ADD) n.src[1] = f32_vector(one, 0, kN);
    n.f[0] = -1.0f;
    n.dst = n.src[0];
  }
  const pi_graph g{nodes.data(), kNodes};
  for (int s = 0; s < kSubmits; ++s) {
    dev.submit(g);
    for (int k = 0; k < kNodes; ++k) {
      for (int64_t i = 0; i < kN; ++i) want[i] = k % 4 == 3 ? -want[i] : want[i] + ones[i];
    }
  }
  std::vector<float> got(kN);
  x.read(8, got.data(), 4 * kN);
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(static_cast<double>(got[i]), want[i]) << i;
}

// Writes that overlap, each at an odd offset, then a read with nothing in
// between: the read sees the last write of every byte. (The Vulkan backend
// holds small writes back to queue them with the next graph or read.)
TEST_F(StreamContract, OverlappingWritesThenRead) {
  BackendDevice& dev = backend().device();
  Rng rng(case_seed("STREAM/overlapping_writes"));
  constexpr uint64_t kBytes = 4099;
  std::vector<uint8_t> want(kBytes), piece;
  for (uint8_t& b : want) b = static_cast<uint8_t>(rng());
  DeviceBuffer buf = DeviceBuffer::allocate(dev, kBytes);
  buf.write(0, want.data(), kBytes);
  for (const auto& [at, n] :
       {std::pair<uint64_t, uint64_t>{7, 1001}, {513, 2049}, {1000, 3}, {2, 4090}, {3001, 1098}}) {
    piece.resize(n);
    for (uint8_t& b : piece) b = static_cast<uint8_t>(rng());
    buf.write(at, piece.data(), n);
    std::copy(piece.begin(), piece.end(), want.begin() + static_cast<std::ptrdiff_t>(at));
    std::fill(piece.begin(), piece.end(), uint8_t{0});  // the source is the caller's again
  }
  std::vector<uint8_t> got(kBytes, 0);
  buf.read(0, got.data(), kBytes);
  for (uint64_t i = 0; i < kBytes; ++i) ASSERT_EQ(got[i], want[i]) << "byte " << i;
}

// Small writes into a buffer that is freed before any graph, read or sync:
// a backend that holds writes back (Vulkan queues them with the next
// submission) must queue or drop them before the buffer goes away, not copy
// into freed memory later (the validation layer flags that on Vulkan). The
// large buffer takes a memory block of its own on Vulkan (past half of a
// 256 MiB block). Another buffer's writes around the free still land.
TEST_F(StreamContract, WritesThenFreeBeforeAnySync) {
  BackendDevice& dev = backend().device();
  Rng rng(case_seed("STREAM/writes_then_free"));
  constexpr uint64_t kBig = 129ull << 20, kN = 1000;
  std::vector<uint8_t> want(kN), piece(kN);
  for (uint8_t& b : want) b = static_cast<uint8_t>(rng());
  DeviceBuffer kept = DeviceBuffer::allocate(dev, kN);
  kept.write(0, want.data(), kN);
  for (uint64_t at : {uint64_t{0}, kBig / 2 + 3, kBig - kN}) {
    DeviceBuffer big = DeviceBuffer::allocate(dev, kBig);
    for (uint8_t& b : piece) b = static_cast<uint8_t>(rng());
    big.write(at, piece.data(), kN);
    big = DeviceBuffer();  // freed with its write still held
    for (uint64_t i = 0; i < kN; i += 7) want[i] = static_cast<uint8_t>(rng());
    kept.write(0, want.data(), kN);
  }
  std::vector<uint8_t> got(kN, 0);
  kept.read(0, got.data(), kN);
  for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], want[i]) << "byte " << i;
}

// Host memory the backend wraps (buffer_wrap_host: page-locked on CUDA,
// imported on Vulkan, zero-copy on the CPU): writes from it of 1 MiB and more
// and reads into it may run by DMA straight from and to it (CUDA, Vulkan), at
// any offset within it; the source is still the caller's at once.
TEST_F(StreamContract, WrappedHostMemory) {
  BackendDevice& dev = backend().device();
  Rng rng(case_seed("STREAM/wrapped_host"));
  constexpr uint64_t kBytes = 3ull << 20;  // whole pages
  std::unique_ptr<uint8_t, decltype(&std::free)> host(
      static_cast<uint8_t*>(std::aligned_alloc(4096, kBytes)), &std::free);
  ASSERT_NE(host, nullptr);
  uint8_t* h = host.get();
  DeviceBuffer wrapped = DeviceBuffer::wrap_host(dev, h, kBytes);
  ASSERT_NE(wrapped.handle(), nullptr) << dev.vt().last_error(dev.handle());
  std::vector<uint8_t> want(kBytes);
  for (uint8_t& b : want) b = static_cast<uint8_t>(rng());
  std::copy(want.begin(), want.end(), h);
  DeviceBuffer buf = DeviceBuffer::allocate(dev, kBytes);
  buf.write(0, h, kBytes);
  std::fill(h, h + kBytes, uint8_t{0x5A});  // the source is the caller's again
  // A small write from the wrapped memory at an odd offset, over the large one.
  constexpr uint64_t kSmallAt = 4099, kSmall = 777;
  for (uint64_t i = 0; i < kSmall; ++i)
    want[kSmallAt + i] = h[100 + i] = static_cast<uint8_t>(rng());
  buf.write(kSmallAt, h + 100, kSmall);
  // Reads into the wrapped memory at odd offsets, one of more than 1 MiB.
  constexpr uint64_t kAt = 4096 + 7, kN = (1ull << 20) + 13;
  buf.read(0, h + kAt, kN);
  buf.read(kBytes - 100, h + 11, 100);
  for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(h[kAt + i], want[i]) << "byte " << i;
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(h[11 + i], want[kBytes - 100 + i]) << "byte " << i;
  for (uint64_t i = kAt + kN; i < kBytes; ++i) ASSERT_EQ(h[i], 0x5A) << "byte " << i;
  wrapped = DeviceBuffer();  // released before the memory under it
}

// ADD(a, b) of kN-value vectors into c at byte offset c_off.
pi_node add_node(const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& c,
                 uint64_t c_off, int64_t n) {
  pi_node add{};
  add.op = PI_OP_ADD;
  add.n_src = 2;
  add.src[0] = f32_vector(a, 0, n);
  add.src[1] = f32_vector(b, 0, n);
  add.dst = f32_vector(c, c_off, n);
  return add;
}

// Random integers in [-1000, 1000] (exact sums in float32).
void fill_ints(std::vector<float>& v, Rng& rng) {
  for (float& x : v) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000);
}

// Whether the backend has prepared graphs (abi.h's optional graph_prepare
// and graph_submit_prepared). One without them must leave both NULL, and the
// host's prepare then declines, so that it submits its graphs as usual.
bool checks_prepare(const BackendDevice& dev) {
  const pi_backend_vtable& vt = dev.vt();
  if (vt.graph_prepare != nullptr) {
    EXPECT_NE(vt.graph_submit_prepared, nullptr)
        << dev.name() << ": graph_prepare without a launch";
    return vt.graph_submit_prepared != nullptr;
  }
  EXPECT_EQ(vt.graph_submit_prepared, nullptr) << dev.name() << ": a launch without graph_prepare";
  pi_node n{};
  n.op = PI_OP_SCALE;
  const pi_graph g{&n, 1};
  EXPECT_FALSE(dev.prepare(g)) << dev.name() << ": the host prepared a graph on a backend without";
  return false;
}

// graph_prepare (abi.h, optional): a prepared graph reads the inputs written
// after its prepare, runs once per prepare, is dropped by a graph_submit in
// between, and still runs right after a buffer of the device was freed (the
// Vulkan backend plans it again then; the freed buffer is not the graph's,
// which the host keeps alive, so this checks that path runs, not that it is
// needed). On a backend without the entries, checks_prepare only.
TEST_F(StreamContract, PreparedGraphSeesLaterWrites) {
  BackendDevice& dev = backend().device();
  const pi_backend_vtable& vt = dev.vt();
  if (!checks_prepare(dev)) return;
  Rng rng(case_seed("STREAM/prepared_graph"));
  constexpr int64_t kN = 213;
  DeviceBuffer a = DeviceBuffer::allocate(dev, 4 * kN), b = DeviceBuffer::allocate(dev, 4 * kN),
               c = DeviceBuffer::allocate(dev, 4 * kN);
  const pi_node add = add_node(a, b, c, 0, kN);
  pi_node scale{};
  scale.op = PI_OP_SCALE;
  scale.n_src = 1;
  scale.src[0] = scale.dst = f32_vector(c, 0, kN);
  scale.f[0] = -1.0f;
  const pi_graph g{&add, 1}, other{&scale, 1};
  std::vector<float> x(kN), y(kN), got(kN);
  const std::vector<float> poison(kN, std::nanf(""));
  // Round r: inputs written after the prepare; round 1 also frees a buffer
  // between the prepare and the launch.
  for (int r = 0; r < 3; ++r) {
    c.write(0, poison.data(), 4 * kN);
    ASSERT_EQ(vt.graph_prepare(dev.stream(), &g), PI_OK) << vt.last_error(dev.handle());
    fill_ints(x, rng);
    fill_ints(y, rng);
    a.write(0, x.data(), 4 * kN);
    b.write(0, y.data(), 4 * kN);
    if (r == 1) DeviceBuffer::allocate(dev, 4096);  // allocated and freed at once
    ASSERT_EQ(vt.graph_submit_prepared(dev.stream()), PI_OK) << vt.last_error(dev.handle());
    c.read(0, got.data(), 4 * kN);
    for (int64_t i = 0; i < kN; ++i)
      ASSERT_EQ(static_cast<double>(got[i]), double{x[i]} + double{y[i]})
          << "round " << r << ", " << i;
  }
  // Launched once: nothing is left prepared.
  EXPECT_EQ(vt.graph_submit_prepared(dev.stream()), PI_ERR_INVALID);
  // A graph_submit drops what was prepared: c is negated once, not added again.
  ASSERT_EQ(vt.graph_prepare(dev.stream(), &g), PI_OK) << vt.last_error(dev.handle());
  dev.submit(other);
  EXPECT_EQ(vt.graph_submit_prepared(dev.stream()), PI_ERR_INVALID);
  c.read(0, got.data(), 4 * kN);
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_EQ(static_cast<double>(got[i]), -(double{x[i]} + double{y[i]})) << i;
}

// Prepared graphs back to back, as decode steps run: the second is prepared
// while the first may still run (the same graph but for its output offset: a
// backend that records graphs must not rewrite the first's parameters), and a
// prepare replaces the one before it (only the last runs).
TEST_F(StreamContract, PreparedGraphsBackToBack) {
  BackendDevice& dev = backend().device();
  const pi_backend_vtable& vt = dev.vt();
  if (!checks_prepare(dev)) return;
  Rng rng(case_seed("STREAM/prepared_back_to_back"));
  constexpr int64_t kN = 301;
  DeviceBuffer a = DeviceBuffer::allocate(dev, 4 * kN), b = DeviceBuffer::allocate(dev, 4 * kN),
               c = DeviceBuffer::allocate(dev, 3 * 4 * kN);
  std::vector<pi_node> add;
  for (uint64_t j = 0; j < 3; ++j) add.push_back(add_node(a, b, c, 4 * kN * j, kN));
  const std::vector<float> poison(3 * kN, std::nanf(""));
  c.write(0, poison.data(), poison.size() * 4);
  std::vector<float> x[2], y[2];
  for (int r = 0; r < 2; ++r) {
    x[r].resize(kN);
    y[r].resize(kN);
    fill_ints(x[r], rng);
    fill_ints(y[r], rng);
  }
  const pi_graph g0{&add[0], 1}, g1{&add[1], 1}, g2{&add[2], 1};
  ASSERT_EQ(vt.graph_prepare(dev.stream(), &g0), PI_OK) << vt.last_error(dev.handle());
  a.write(0, x[0].data(), 4 * kN);
  b.write(0, y[0].data(), 4 * kN);
  ASSERT_EQ(vt.graph_submit_prepared(dev.stream()), PI_OK) << vt.last_error(dev.handle());
  // No sync: g0 may still run. g2 is prepared, then replaced by g1.
  ASSERT_EQ(vt.graph_prepare(dev.stream(), &g2), PI_OK) << vt.last_error(dev.handle());
  ASSERT_EQ(vt.graph_prepare(dev.stream(), &g1), PI_OK) << vt.last_error(dev.handle());
  a.write(0, x[1].data(), 4 * kN);
  b.write(0, y[1].data(), 4 * kN);
  ASSERT_EQ(vt.graph_submit_prepared(dev.stream()), PI_OK) << vt.last_error(dev.handle());
  std::vector<float> got(3 * kN);
  c.read(0, got.data(), got.size() * 4);
  for (int r = 0; r < 2; ++r) {
    for (int64_t i = 0; i < kN; ++i) {
      ASSERT_EQ(static_cast<double>(got[r * kN + i]), double{x[r][i]} + double{y[r][i]})
          << "graph " << r << ", " << i;
    }
  }
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_TRUE(std::isnan(got[2 * kN + i])) << "replaced graph ran, " << i;
}

// Decode steps as a model submits them: each step writes its K and V rows
// into the cache at the step's position and attends over the positions so
// far, its query and output at a step-dependent offset. The steps differ only
// in offsets and the KV length, so a backend that records graphs replays one
// recording with new offsets and lengths; they are queued without a sync, so
// a replay is queued while the previous one may still run. Against float64,
// within a bound far above F32 rounding and far below any misplaced read.
TEST_F(StreamContract, DecodeStepsReplayedWithNewOffsets) {
  BackendDevice& dev = backend().device();
  Rng rng(case_seed("STREAM/decode_steps"));
  constexpr int64_t kD = 32, kH = 4, kHkv = 2, kSteps = 24;
  constexpr uint64_t kRow = 4 * kD, kPos = kRow * kHkv, kTok = kRow * kH;
  std::vector<float> q(kSteps * kD * kH), kv_new(2 * kSteps * kD * kHkv);
  for (float& x : q) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1000.0f;
  for (float& x : kv_new) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1000.0f;
  const float* k_new = kv_new.data();
  const float* v_new = kv_new.data() + kSteps * kD * kHkv;
  DeviceBuffer qb = DeviceBuffer::allocate(dev, kSteps * kTok);
  DeviceBuffer newb = DeviceBuffer::allocate(dev, 2 * kSteps * kPos);
  DeviceBuffer cache = DeviceBuffer::allocate(dev, 2 * kSteps * kPos);  // K, then V
  DeviceBuffer out = DeviceBuffer::allocate(dev, kSteps * kTok);
  qb.write(0, q.data(), kSteps * kTok);
  newb.write(0, kv_new.data(), 2 * kSteps * kPos);
  const std::vector<uint8_t> poison(kSteps * kTok, 0xFF);
  out.write(0, poison.data(), poison.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));

  for (int64_t s = 0; s < kSteps; ++s) {
    const int64_t n_kv = s + 1;
    const uint64_t v_base = kSteps * kPos;
    pi_node nodes[3]{};
    for (int kv = 0; kv < 2; ++kv) {
      const uint64_t at = kv * v_base + s * kPos;
      nodes[kv].op = PI_OP_CPY;
      nodes[kv].n_src = 1;
      nodes[kv].src[0] = f32_view(newb, at, {kD, kHkv, 1, 1}, {4, kRow, kPos, kPos});
      nodes[kv].dst = f32_view(cache, at, {kD, kHkv, 1, 1}, {4, kRow, kPos, kPos});
    }
    pi_node& fa = nodes[2];
    fa.op = PI_OP_FLASH_ATTN;
    fa.n_src = 3;
    fa.f[0] = scale;
    fa.src[0] = f32_view(qb, s * kTok, {kD, 1, kH, 1}, {4, kTok, kRow, kTok});
    const std::initializer_list<uint64_t> kv_nb{4, kPos, kRow, kPos * n_kv};
    fa.src[1] = f32_view(cache, 0, {kD, n_kv, kHkv, 1}, kv_nb);
    fa.src[2] = f32_view(cache, v_base, {kD, n_kv, kHkv, 1}, kv_nb);
    fa.dst = f32_view(out, s * kTok, {kD, kH, 1, 1}, {4, kRow, kTok, kTok});
    dev.submit(pi_graph{nodes, 3});
  }

  std::vector<float> got(kSteps * kD * kH);
  out.read(0, got.data(), kSteps * kTok);
  for (int64_t s = 0; s < kSteps; ++s) {
    for (int64_t h = 0; h < kH; ++h) {
      const int64_t hk = h / (kH / kHkv);
      const float* qv = q.data() + (s * kH + h) * kD;
      std::vector<double> w(s + 1);
      double w_max = -INFINITY, w_sum = 0;
      for (int64_t j = 0; j <= s; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < kD; ++d) dot += double{qv[d]} * k_new[(j * kHkv + hk) * kD + d];
        w[j] = scale * dot;
        w_max = std::max(w_max, w[j]);
      }
      for (double& x : w) w_sum += (x = std::exp(x - w_max));
      for (int64_t d = 0; d < kD; ++d) {
        double want = 0;
        for (int64_t j = 0; j <= s; ++j) want += w[j] * v_new[(j * kHkv + hk) * kD + d];
        want /= w_sum;
        const double g = got[(s * kH + h) * kD + d];
        ASSERT_NEAR(g, want, 1e-5) << "step " << s << " head " << h << " dim " << d;
      }
    }
  }
}

// A product whose weights an earlier node of the same graph writes (CPY of
// float32 values into an F16 or Q8_0 matrix), submitted again with new values
// (a backend that records graphs replays it): a backend whose kernels start before the previous one
// ends (CUDA's programmatic dependent launch) must not read such weights
// early. The weight buffer starts as NaN poison. Every value is a small
// integer, so the F16 sums are exact in float32; Q8_0 blocks start with ±127,
// so the weights' scales are 1 and the activations' 8-bit blocks are exact
// too, and the bound is float32 rounding of the block sums (which reach
// 2^27 in CUDA's 16-bit activation units): 1e-6 of the row's Σ|w·x|. A
// stale or poisoned weight moves a row by a whole product (at least 1).
class WeightsWrittenInGraph : public ConformanceTest,
                              public ::testing::WithParamInterface<uint32_t> {};

TEST_P(WeightsWrittenInGraph, ProductReadsTheNewWeights) {
  BackendDevice& dev = backend().device();
  const uint32_t type = GetParam();
  const bool q8 = type == 8;
  Rng rng(case_seed(q8 ? "STREAM/weights_in_graph_q8_0" : "STREAM/weights_in_graph_f16"));
  constexpr int64_t kK = 512, kN = 1024, kRounds = 4;
  const int range = q8 ? 127 : 8;
  const uint64_t w_row = q8 ? kK / 32 * 34 : 2 * kK;
  DeviceBuffer src = DeviceBuffer::allocate(dev, 4 * kK * kN);
  DeviceBuffer w = DeviceBuffer::allocate(dev, w_row * kN);
  DeviceBuffer x = DeviceBuffer::allocate(dev, 4 * kK);
  DeviceBuffer y = DeviceBuffer::allocate(dev, 4 * kN);
  const std::vector<uint8_t> poison(w_row * kN, 0xFF);
  w.write(0, poison.data(), poison.size());
  pi_node nodes[2]{};
  nodes[0].op = PI_OP_CPY;
  nodes[0].n_src = 1;
  nodes[0].src[0] = f32_view(src, 0, {kK, kN, 1, 1}, {4, 4 * kK, 4 * kK * kN, 4 * kK * kN});
  pi_tensor wt{};
  wt.type = type;
  std::copy_n(std::initializer_list<int64_t>{kK, kN, 1, 1}.begin(), 4, wt.ne);
  std::copy_n(std::initializer_list<uint64_t>{q8 ? 34u : 2u, w_row, w_row * kN, w_row * kN}.begin(),
              4, wt.nb);
  wt.buffer = w.handle();
  nodes[0].dst = wt;
  nodes[1].op = PI_OP_MUL_MAT;
  nodes[1].n_src = 2;
  nodes[1].src[0] = wt;
  nodes[1].src[1] = f32_vector(x, 0, kK);
  nodes[1].dst = f32_vector(y, 0, kN);
  const auto draw = [&](int64_t i) {
    if (q8 && i % 32 == 0) return rng() % 2 ? 127.0f : -127.0f;
    return static_cast<float>(static_cast<int>(rng() % (2 * range + 1)) - range);
  };
  std::vector<float> wv(kK * kN), xv(kK), got(kN);
  for (int r = 0; r < kRounds; ++r) {
    for (int64_t i = 0; i < kK * kN; ++i) wv[i] = draw(i % kK);
    for (int64_t i = 0; i < kK; ++i) xv[i] = draw(i);
    src.write(0, wv.data(), 4 * kK * kN);
    x.write(0, xv.data(), 4 * kK);
    dev.submit(pi_graph{nodes, 2});
    y.read(0, got.data(), 4 * kN);
    for (int64_t n = 0; n < kN; ++n) {
      double want = 0, mag = 0;
      for (int64_t k = 0; k < kK; ++k) {
        want += double{wv[n * kK + k]} * xv[k];
        mag += std::fabs(double{wv[n * kK + k]} * xv[k]);
      }
      ASSERT_NEAR(static_cast<double>(got[n]), want, q8 ? 1e-6 * mag : 0.0)
          << "round " << r << " row " << n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stream, WeightsWrittenInGraph, ::testing::Values(1u, 8u),
                         [](const auto& info) { return info.param == 1u ? "F16" : "Q8_0"; });

}  // namespace
}  // namespace polyinfer::conformance
