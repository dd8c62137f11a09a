// A backend plugin's kernels through the backend ABI (dlopen, as the host
// does): MUL_MAT decode (1 and 4 columns, weights read in their stored format)
// in GB/s of weight bytes, MUL_MAT prefill (512 columns) in TFLOP/s,
// FLASH_ATTN decode and prefill, and a replay check (a graph submitted again,
// which CUDA replays as a captured graph and Vulkan as its recording, must
// give the bits of the first submit). Reports speed; the only assertion is
// the replay check, whose failure exits 1.
//
// Usage: polyinfer-bench-kernels [--plugin path/to/libpolyinfer-NAME.so]
//                                [--options "key=value;..."] [--small]
// (default plugin: libpolyinfer-cuda.so beside the executable; --options are
// the device options, e.g. coopmat=0 for Vulkan's float32 GEMM; --small: shapes
// a CPU driver such as lavapipe runs in seconds.)
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "abi_session.hpp"
#include "polyinfer/backend/abi.h"
#include "polyinfer/dtype.hpp"
#include "polyinfer/fp16.hpp"

namespace {

polyinfer::bench::AbiSession g_abi;

void check(pi_status s, const char* what) {
  g_abi.check(s, what);
}

pi_buffer upload(const std::vector<uint8_t>& bytes) {
  pi_buffer b = nullptr;
  check(g_abi.vt->buffer_alloc(g_abi.dev, bytes.size(), &b), "buffer_alloc");
  check(g_abi.vt->buffer_write(g_abi.stream, b, 0, bytes.data(), bytes.size()), "buffer_write");
  return b;
}

pi_tensor tensor(uint32_t type, std::initializer_list<int64_t> ne, pi_buffer buf) {
  pi_tensor t{};
  t.type = type;
  const polyinfer::TypeTraits& tt = polyinfer::traits(static_cast<polyinfer::GgmlType>(type));
  int d = 0;
  for (int64_t n : ne) t.ne[d++] = n;
  for (; d < 4; ++d) t.ne[d] = 1;
  t.nb[0] = tt.type_size;
  t.nb[1] = t.nb[0] * static_cast<uint64_t>(t.ne[0] / tt.block_size);
  for (int i = 2; i < 4; ++i) t.nb[i] = t.nb[i - 1] * static_cast<uint64_t>(t.ne[i - 1]);
  t.buffer = buf;
  return t;
}

uint64_t bytes_of(const pi_tensor& t) {
  return t.nb[3] * static_cast<uint64_t>(t.ne[3]);
}

// Random bytes with every F16 field of a block a small finite scale; plain
// types get normal values.
std::vector<uint8_t> random_tensor(const pi_tensor& t, std::mt19937_64& rng) {
  std::vector<uint8_t> b(bytes_of(t));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  if (t.type == 0) {
    for (size_t i = 0; i < b.size() / 4; ++i) {
      const float v = normal(rng);
      std::memcpy(&b[4 * i], &v, 4);
    }
    return b;
  }
  if (t.type == 1) {
    for (size_t i = 0; i < b.size() / 2; ++i) {
      const uint16_t h = polyinfer::fp32_to_fp16(normal(rng));
      std::memcpy(&b[2 * i], &h, 2);
    }
    return b;
  }
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  // The scale fields of the types benchmarked here: d at 0 (Q4_0, Q8_0, Q4_K
  // d and dmin), Q6_K d at 208.
  const size_t bs = t.nb[0];
  for (size_t off = 0; off < b.size(); off += bs) {
    const uint16_t h = polyinfer::fp32_to_fp16(0.01f);
    if (t.type == 14) {
      std::memcpy(&b[off + 208], &h, 2);
    } else {
      std::memcpy(&b[off], &h, 2);
      if (t.type == 12) std::memcpy(&b[off + 2], &h, 2);
    }
  }
  return b;
}

// Median wall time of one submit + sync over `reps` submits of g, after 3.
double time_graph(const pi_graph& g, int reps) {
  return g_abi.median_submit(g, 3, reps);
}

std::string type_name(uint32_t t) {
  return std::string(polyinfer::type_name(static_cast<polyinfer::GgmlType>(t)));
}

// A node of `op` reading `srcs` (n_src of them; absent ones past `srcs`) into dst.
pi_node make_node(pi_op op, std::initializer_list<pi_tensor> srcs, const pi_tensor& dst,
                  uint32_t n_src = 0) {
  pi_node node{};
  node.op = op;
  node.n_src = n_src > 0 ? n_src : static_cast<uint32_t>(srcs.size());
  std::copy(srcs.begin(), srcs.end(), node.src);
  node.dst = dst;
  return node;
}

// k x n weights of each type in `types` against M = 1, 4 and 512 columns.
void bench_mul_mat(std::mt19937_64& rng, int64_t k, int64_t n,
                   std::initializer_list<uint32_t> types) {
  std::printf(
      "\n| MUL_MAT K=%lld N=%lld | type | M | median ms | weight GB/s | TFLOP/s "
      "|\n|---|---|---|---|---|---|\n",
      static_cast<long long>(k), static_cast<long long>(n));
  for (uint32_t type : types) {
    pi_tensor w = tensor(type, {k, n}, nullptr);
    pi_buffer wb = upload(random_tensor(w, rng));
    w.buffer = wb;
    for (int64_t m : {1, 4, 512}) {
      pi_tensor a = tensor(0, {k, m}, nullptr);
      pi_buffer ab = upload(random_tensor(a, rng));
      a.buffer = ab;
      pi_tensor d = tensor(0, {n, m}, nullptr);
      pi_buffer db = nullptr;
      check(g_abi.vt->buffer_alloc(g_abi.dev, bytes_of(d), &db), "buffer_alloc");
      d.buffer = db;
      const pi_node node = make_node(PI_OP_MUL_MAT, {w, a}, d);
      const pi_graph g{&node, 1};
      const double s = time_graph(g, m <= 8 ? 50 : 10);
      std::printf("| | %s | %lld | %.4f | %.0f | %.1f |\n", type_name(type).c_str(),
                  static_cast<long long>(m), s * 1e3, static_cast<double>(bytes_of(w)) / s / 1e9,
                  2.0 * k * n * m / s / 1e12);
      g_abi.vt->buffer_free(ab);
      g_abi.vt->buffer_free(db);
    }
    g_abi.vt->buffer_free(wb);
  }
}

struct AttnCase {
  int64_t t, n_kv;
  bool causal;
};

void bench_flash_attn(std::mt19937_64& rng, std::initializer_list<AttnCase> cases) {
  const int64_t d = 128, h = 32, hkv = 8;
  std::printf(
      "\n| FLASH_ATTN D=128 H=32 Hkv=8 | KV | T | n_kv | mask | median ms | KV GB/s | TFLOP/s "
      "|\n|---|---|---|---|---|---|---|---|\n");
  for (uint32_t kvt : {1u, 8u}) {
    for (const AttnCase& cs : cases) {
      const int64_t t = cs.t, n_kv = cs.n_kv;
      pi_tensor q = tensor(0, {d, t, h}, nullptr);
      pi_tensor kk = tensor(kvt, {d, n_kv, hkv}, nullptr);
      pi_tensor v = tensor(kvt, {d, n_kv, hkv}, nullptr);
      pi_tensor o = tensor(0, {d, h, t}, nullptr);
      pi_buffer qb = upload(random_tensor(q, rng)), kb = upload(random_tensor(kk, rng)),
                vb = upload(random_tensor(v, rng)), ob = nullptr, mb = nullptr;
      check(g_abi.vt->buffer_alloc(g_abi.dev, bytes_of(o), &ob), "buffer_alloc");
      q.buffer = qb;
      kk.buffer = kb;
      v.buffer = vb;
      o.buffer = ob;
      pi_node node = make_node(PI_OP_FLASH_ATTN, {q, kk, v}, o, 4);  // src[3]: the mask, if any
      if (cs.causal) {
        // Token i sees positions j <= n_kv - t + i (the prompt's last t tokens).
        pi_tensor m = tensor(0, {n_kv, t}, nullptr);
        std::vector<float> mv(static_cast<size_t>(n_kv * t));
        for (int64_t i = 0; i < t; ++i) {
          for (int64_t j = 0; j < n_kv; ++j) {
            mv[static_cast<size_t>(i * n_kv + j)] = j <= n_kv - t + i ? 0.0f : -INFINITY;
          }
        }
        std::vector<uint8_t> mbytes(mv.size() * sizeof(float));
        std::memcpy(mbytes.data(), mv.data(), mbytes.size());
        mb = upload(mbytes);
        m.buffer = mb;
        node.src[3] = m;
      }
      node.f[0] = 1.0f / std::sqrt(static_cast<float>(d));
      const pi_graph g{&node, 1};
      const double s = time_graph(g, 20);
      // Attention FLOPs (QKᵀ and PV), halved for the causal mask's triangle.
      double flop = 4.0 * static_cast<double>(d * t * n_kv * h);
      if (cs.causal) flop *= (static_cast<double>(n_kv) - 0.5 * static_cast<double>(t)) / n_kv;
      std::printf("| | %s | %lld | %lld | %s | %.4f | %.0f | %.1f |\n", type_name(kvt).c_str(),
                  static_cast<long long>(t), static_cast<long long>(n_kv),
                  cs.causal ? "causal" : "none", s * 1e3,
                  2.0 * static_cast<double>(bytes_of(kk)) / s / 1e9, flop / s / 1e12);
      for (pi_buffer b : {qb, kb, vb, ob}) g_abi.vt->buffer_free(b);
      if (mb) g_abi.vt->buffer_free(mb);
    }
  }
}

// A three-node graph (RMS_NORM, MUL_MAT Q4_0, ADD) submitted with inputs X1
// (eager), X2 (captured) and X1 again (replayed): the third output must be
// the bits of the first.
bool check_graph_replay(std::mt19937_64& rng) {
  const int64_t k = 4096, n = 4096;
  pi_tensor x = tensor(0, {k, 1}, nullptr), y = tensor(0, {k, 1}, nullptr);
  pi_tensor w = tensor(2, {k, n}, nullptr), z = tensor(0, {n, 1}, nullptr),
            r = tensor(0, {n, 1}, nullptr);
  const std::vector<uint8_t> x1 = random_tensor(x, rng), x2 = random_tensor(x, rng);
  pi_buffer xb = upload(x1), wb = upload(random_tensor(w, rng)), yb = nullptr, zb = nullptr,
            rb = upload(random_tensor(r, rng));
  check(g_abi.vt->buffer_alloc(g_abi.dev, bytes_of(y), &yb), "buffer_alloc");
  check(g_abi.vt->buffer_alloc(g_abi.dev, bytes_of(z), &zb), "buffer_alloc");
  x.buffer = xb, y.buffer = yb, w.buffer = wb, z.buffer = zb, r.buffer = rb;
  pi_node nodes[3] = {make_node(PI_OP_RMS_NORM, {x}, y), make_node(PI_OP_MUL_MAT, {w, y}, z),
                      make_node(PI_OP_ADD, {z, r}, z)};
  nodes[0].f[0] = 1e-5f;
  const pi_graph g{nodes, 3};
  std::vector<float> out1(n), out3(n);
  check(g_abi.vt->graph_submit(g_abi.stream, &g), "graph_submit");
  check(g_abi.vt->buffer_read(g_abi.stream, zb, 0, out1.data(), n * 4), "buffer_read");
  check(g_abi.vt->buffer_write(g_abi.stream, xb, 0, x2.data(), x2.size()), "buffer_write");
  check(g_abi.vt->graph_submit(g_abi.stream, &g), "graph_submit");
  check(g_abi.vt->buffer_write(g_abi.stream, xb, 0, x1.data(), x1.size()), "buffer_write");
  check(g_abi.vt->graph_submit(g_abi.stream, &g), "graph_submit");
  check(g_abi.vt->buffer_read(g_abi.stream, zb, 0, out3.data(), n * 4), "buffer_read");
  const double s_eager = time_graph(g, 50);
  const bool same = std::memcmp(out1.data(), out3.data(), n * 4) == 0;
  std::printf("\ngraph replay (RMS_NORM, MUL_MAT Q4_0 4096x4096, ADD): %s; submit+sync %.1f us\n",
              same ? "bitwise equal to eager" : "DIFFERS from eager", s_eager * 1e6);
  for (pi_buffer b : {xb, yb, wb, zb, rb}) g_abi.vt->buffer_free(b);
  return same;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A backend plugin's kernels through the ABI: MUL_MAT, FLASH_ATTN, graph replay"};
  std::string path, options;
  bool small = false;
  app.add_option("--plugin", path,
                 "the plugin (default: libpolyinfer-cuda.so beside this program)");
  app.add_option("--options", options, "device options, key=value;...");
  app.add_flag("--small", small, "shapes a CPU driver runs in seconds");
  CLI11_PARSE(app, argc, argv);
  if (path.empty()) {
    char exe[4096];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    path = std::string(exe).substr(0, std::string(exe).rfind('/') + 1) + "libpolyinfer-cuda.so";
  }
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", path.c_str(), dlerror());
    return 2;
  }
  auto entry = reinterpret_cast<pi_backend_entry_fn>(dlsym(lib, PI_ENTRY_SYMBOL));
  if (entry == nullptr) {
    std::fprintf(stderr, "%s has no %s\n", path.c_str(), PI_ENTRY_SYMBOL);
    return 2;
  }
  g_abi.vt = entry();
  char reason[256] = "";
  if (!g_abi.vt->probe(reason, sizeof reason)) {
    std::fprintf(stderr, "%s unusable: %s\n", g_abi.vt->name, reason);
    return 2;
  }
  pi_device_info info{};
  check(g_abi.vt->device_info(0, &info), "device_info");
  std::printf("%s device: %s (%s), driver %s, %s, %.1f GiB; options \"%s\"\n", g_abi.vt->name,
              info.name, info.compute_version, info.driver_version, info.bus_id,
              static_cast<double>(info.memory_total) / (1 << 30), options.c_str());
  check(g_abi.vt->device_open(0, options.empty() ? nullptr : options.c_str(), &g_abi.dev),
        "device_open");
  check(g_abi.vt->stream_create(g_abi.dev, &g_abi.stream), "stream_create");
  std::mt19937_64 rng(42);
  const bool ok = check_graph_replay(rng);
  if (small) {
    bench_mul_mat(rng, 512, 1024, {2u, 12u, 14u, 8u, 1u});
    bench_flash_attn(rng, {{1, 256, false}, {64, 64, true}});
  } else {
    // 4096 x 57344 (four llama-8B FFN matrices): every type is several times
    // the H200's 60 MB L2, so repeated runs measure HBM, not the cache. Then
    // llama-8B's Q and O projections (4096 x 4096) and its K and V (4096 x
    // 1024), whose prompt GEMMs are the smallest grids.
    bench_mul_mat(rng, 4096, 57344, {2u, 12u, 14u, 8u, 1u});
    bench_mul_mat(rng, 4096, 4096, {2u, 12u, 1u});
    bench_mul_mat(rng, 4096, 1024, {12u});
    bench_flash_attn(rng, {{1, 4096, false},
                           {1, 16384, false},
                           {512, 512, false},
                           {512, 4096, false},
                           {512, 512, true},
                           {512, 4096, true}});
  }
  g_abi.vt->stream_destroy(g_abi.stream);
  g_abi.vt->device_close(g_abi.dev);
  return ok ? 0 : 1;
}
