// What the scheduler needs from a backend's buffers and streams, beyond one
// node per graph: writes and reads at arbitrary byte offsets, many buffers
// alive at once, many graphs queued on one stream without a sync between
// them, and buffer_write's promise that `src` may be reused as soon as it
// returns. Values are random small integers, so every sum is exact in float32
// and the results must match the float64 reference exactly.
#include <cstring>
#include <vector>

#include "backend_under_test.hpp"
#include "random_data.hpp"

namespace polyinfer::conformance {
namespace {

class StreamContract : public ConformanceTest {};

pi_tensor f32_vector(const DeviceBuffer& buf, uint64_t offset, int64_t n) {
  pi_tensor t{};
  t.type = 0;
  t.ne[0] = n;
  t.ne[1] = t.ne[2] = t.ne[3] = 1;
  t.nb[0] = 4;
  t.nb[1] = t.nb[2] = t.nb[3] = 4 * static_cast<uint64_t>(n);
  t.buffer = buf.handle();
  t.offset = offset;
  return t;
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

}  // namespace
}  // namespace polyinfer::conformance
