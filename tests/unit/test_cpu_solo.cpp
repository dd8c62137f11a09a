// The CPU backend runs graphs of little work on the submitting thread
// (graph_work.hpp): the results are those of the thread pool, the work
// estimate counts what it says, and a malformed "solo=" option is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/graph_work.hpp"

namespace polyinfer {
namespace {

constexpr uint32_t kF32 = 0, kI32 = 26;

pi_tensor host_tensor(uint32_t type, std::vector<int64_t> ne, void* data) {
  pi_tensor t{};
  t.type = type;
  for (int d = 0; d < 4; ++d) t.ne[d] = d < static_cast<int>(ne.size()) ? ne[d] : 1;
  t.nb[0] = 4;
  for (int d = 1; d < 4; ++d) t.nb[d] = t.nb[d - 1] * static_cast<uint64_t>(t.ne[d - 1]);
  t.buffer = static_cast<pi_buffer>(data);  // a CPU buffer handle is its address
  return t;
}

// A decode step's CPU share and a little more: GET_ROWS of the token rows from
// an embedding table, then a product of the rows with a small weight matrix.
struct Case {
  static constexpr int64_t k = 64, vocab = 10, rows = 3, n = 48;
  std::vector<float> table, w;
  std::vector<int32_t> ids{7, 2, 7};
  std::vector<float> emb, out;
  Case() {
    std::mt19937 rng(2026);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < k * vocab; ++i) table.push_back(u(rng));
    for (int64_t i = 0; i < k * n; ++i) w.push_back(u(rng));
    emb.assign(k * rows, NAN);  // poisoned
    out.assign(n * rows, NAN);
  }
  std::vector<pi_node> nodes() {
    pi_node get{}, mm{};
    get.op = PI_OP_GET_ROWS;
    get.n_src = 2;
    get.src[0] = host_tensor(kF32, {k, vocab}, table.data());
    get.src[1] = host_tensor(kI32, {rows}, ids.data());
    get.dst = host_tensor(kF32, {k, rows}, emb.data());
    mm.op = PI_OP_MUL_MAT;
    mm.n_src = 2;
    mm.src[0] = host_tensor(kF32, {k, n}, w.data());
    mm.src[1] = get.dst;
    mm.dst = host_tensor(kF32, {n, rows}, out.data());
    return {get, mm};
  }
};

std::vector<float> run(const char* options) {
  const pi_backend_vtable& cpu = *polyinfer_cpu_backend_entry();
  pi_device dev = nullptr;
  pi_stream s = nullptr;
  EXPECT_EQ(cpu.device_open(0, options, &dev), PI_OK);
  EXPECT_EQ(cpu.stream_create(dev, &s), PI_OK);
  Case c;
  const std::vector<pi_node> nodes = c.nodes();
  const pi_graph g{nodes.data(), 2};
  EXPECT_EQ(cpu.graph_submit(s, &g), PI_OK);
  cpu.stream_destroy(s);
  cpu.device_close(dev);
  return c.out;
}

TEST(CpuSolo, SmallGraphOnTheCallerMatchesThePoolAndFloat64) {
  Case c;
  const std::vector<pi_node> nodes = c.nodes();
  ASSERT_LT(cpu::graph_work(pi_graph{nodes.data(), 2}), cpu::kSoloWork);
  const std::vector<float> solo = run("threads=4"), pool = run("threads=4,solo=0");
  for (int64_t r = 0; r < Case::rows; ++r) {
    for (int64_t j = 0; j < Case::n; ++j) {
      double ref = 0;
      for (int64_t i = 0; i < Case::k; ++i)
        ref += double(c.w[j * Case::k + i]) * c.table[c.ids[r] * Case::k + i];
      // float32 accumulation of 64 products of values in [-1, 1]
      EXPECT_NEAR(solo[r * Case::n + j], ref, 1e-4) << r << "," << j;
      EXPECT_NEAR(pool[r * Case::n + j], ref, 1e-4) << r << "," << j;
    }
  }
}

TEST(CpuSolo, WorkCountsDotProductsAndElements) {
  Case c;
  std::vector<pi_node> nodes = c.nodes();
  EXPECT_EQ(cpu::graph_work(pi_graph{nodes.data(), 1}), uint64_t(Case::k * Case::rows));
  EXPECT_EQ(cpu::graph_work(pi_graph{nodes.data(), 2}),
            uint64_t(Case::k * Case::rows + Case::n * Case::rows * Case::k));
}

TEST(CpuSolo, MalformedOptionIsRefused) {
  const pi_backend_vtable& cpu = *polyinfer_cpu_backend_entry();
  pi_device dev = nullptr;
  EXPECT_EQ(cpu.device_open(0, "solo=many", &dev), PI_ERR_INVALID);
  EXPECT_EQ(cpu.device_open(0, "solo=-3", &dev), PI_ERR_INVALID);
  EXPECT_NE(std::string(cpu.last_error(nullptr)).find("solo"), std::string::npos);
}

}  // namespace
}  // namespace polyinfer
