// CPU op benchmarks through the backend vtable (Google Benchmark):
//   polyinfer-bench-ops [--benchmark_filter=REGEX] [--benchmark_repetitions=N]
// Each iteration submits one node to a CPU device opened with threads=<arg>
// and syncs. Shapes are those of a 1B llama (n_embd 2048, 32 query heads and
// 8 KV heads of 64) at a 512-token prefill and at one decode step over 512
// cached positions. FLASH_ATTN reports GFLOP/s (2 per multiply-add of QK^T and
// PV over the unmasked positions), the others GB/s (bytes read + written).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "backend/device.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer {
namespace {

using Ne = std::array<int64_t, 4>;
using Nb = std::array<uint64_t, 4>;

Nb contiguous_strides(GgmlType type, const Ne& ne) {
  const uint64_t row = row_size(type, ne[0]);
  return {traits(type).type_size, row, row * ne[1], row * ne[1] * ne[2]};
}

// One node on a CPU device, its tensors in buffers of their own.
class NodeBench {
 public:
  explicit NodeBench(int threads)
      : dev_(*polyinfer_cpu_backend_entry(), 0, "threads=" + std::to_string(threads)) {}

  // A tensor of `bytes` bytes (a view when nb is not contiguous) holding N(0, 1)
  // values converted to `type`.
  pi_tensor random(GgmlType type, const Ne& ne, const Nb& nb, uint64_t bytes) {
    const int64_t n =
        static_cast<int64_t>(bytes / traits(type).type_size) * traits(type).block_size;
    std::vector<float> x(static_cast<size_t>(n));
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng_);
    std::vector<uint8_t> data(bytes);
    quantize_row(type, x.data(), data.data(), n);
    return upload(type, ne, nb, data);
  }
  pi_tensor random(GgmlType type, const Ne& ne) {
    const Nb nb = contiguous_strides(type, ne);
    return random(type, ne, nb, nb[3] * ne[3]);
  }
  pi_tensor upload(GgmlType type, const Ne& ne, const Nb& nb, const std::vector<uint8_t>& data) {
    buffers_.push_back(DeviceBuffer::allocate(dev_, data.size()));
    buffers_.back().write(0, data.data(), data.size());
    pi_tensor t{};
    t.type = static_cast<uint32_t>(type);
    std::copy(ne.begin(), ne.end(), t.ne);
    std::copy(nb.begin(), nb.end(), t.nb);
    t.buffer = buffers_.back().handle();
    return t;
  }
  pi_tensor output(GgmlType type, const Ne& ne) {
    const Nb nb = contiguous_strides(type, ne);
    return upload(type, ne, nb, std::vector<uint8_t>(nb[3] * ne[3]));
  }

  pi_node node{};

  void run() {
    const pi_graph g{&node, 1};
    dev_.submit(g);
    dev_.sync();
  }

 private:
  BackendDevice dev_;
  std::vector<DeviceBuffer> buffers_;
  std::mt19937_64 rng_{42};
};

constexpr int64_t kEmbd = 2048, kTokens = 512;
constexpr int64_t kHeadDim = 64, kHeads = 32, kKvHeads = 8, kCtx = 512;

// FLASH_ATTN as the model submits it: q a [D, T, H] view of [D, H, T], K/V
// [D, n_kv, Hkv] views of an F16 cache [D, Hkv, n_ctx], causal mask [n_kv, T].
void flash_attn(benchmark::State& state, int64_t n_tokens) {
  NodeBench b(static_cast<int>(state.range(0)));
  const int64_t n_kv = kCtx, n_past = n_kv - n_tokens;
  const uint64_t qrow = kHeadDim * 4;
  b.node.op = PI_OP_FLASH_ATTN;
  b.node.src[0] =
      b.random(GgmlType::F32, {kHeadDim, n_tokens, kHeads, 1},
               {4, qrow * kHeads, qrow, qrow * kHeads * n_tokens}, qrow * kHeads * n_tokens);
  const uint64_t krow = row_size(GgmlType::F16, kHeadDim);
  const Nb kv_nb{2, krow * kKvHeads, krow, krow * kKvHeads * n_kv};
  for (int i : {1, 2}) {
    b.node.src[i] =
        b.random(GgmlType::F16, {kHeadDim, n_kv, kKvHeads, 1}, kv_nb, krow * kKvHeads * kCtx);
  }
  std::vector<float> mask(static_cast<size_t>(n_kv * n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t j = 0; j < n_kv; ++j) {
      mask[t * n_kv + j] = j <= n_past + t ? 0.0f : -std::numeric_limits<float>::infinity();
    }
  }
  const Ne mask_ne{n_kv, n_tokens, 1, 1};
  std::vector<uint8_t> mask_bytes(mask.size() * 4);
  std::memcpy(mask_bytes.data(), mask.data(), mask_bytes.size());
  b.node.src[3] =
      b.upload(GgmlType::F32, mask_ne, contiguous_strides(GgmlType::F32, mask_ne), mask_bytes);
  b.node.n_src = 4;
  b.node.f[0] = 0.125f;
  b.node.dst = b.output(GgmlType::F32, {kHeadDim, kHeads, n_tokens, 1});
  for (auto _ : state) b.run();
  const double visible = n_tokens * (n_past + 0.5 * (n_tokens + 1));  // (t, j) pairs
  state.counters["GFLOP/s"] = benchmark::Counter(
      4.0 * kHeadDim * kHeads * visible * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void BM_FlashAttnPrefill(benchmark::State& state) {
  flash_attn(state, kTokens);
}
void BM_FlashAttnDecode(benchmark::State& state) {
  flash_attn(state, 1);
}

// An op of one or two F32 [2048, 512] inputs with an F32 output of that shape.
void elementwise(benchmark::State& state, pi_op op, int n_src) {
  NodeBench b(static_cast<int>(state.range(0)));
  const Ne ne{kEmbd, kTokens, 1, 1};
  b.node.op = op;
  b.node.n_src = n_src;
  for (int i = 0; i < n_src; ++i) b.node.src[i] = b.random(GgmlType::F32, ne);
  b.node.f[0] = 1e-5f;
  b.node.dst = b.output(GgmlType::F32, ne);
  for (auto _ : state) b.run();
  state.SetBytesProcessed(state.iterations() * (n_src + 1) * kEmbd * kTokens * 4);
}

void BM_RmsNorm(benchmark::State& state) {
  elementwise(state, PI_OP_RMS_NORM, 1);
}
void BM_Swiglu(benchmark::State& state) {
  elementwise(state, PI_OP_SWIGLU, 2);
}
void BM_Add(benchmark::State& state) {
  elementwise(state, PI_OP_ADD, 2);
}
void BM_SoftMax(benchmark::State& state) {
  elementwise(state, PI_OP_SOFT_MAX, 1);
}

// The KV cache store of a prefill: K [64, 8, 512] F32 -> F16.
void BM_CpyF32ToF16(benchmark::State& state) {
  NodeBench b(static_cast<int>(state.range(0)));
  const Ne ne{kHeadDim, kKvHeads, kTokens, 1};
  b.node.op = PI_OP_CPY;
  b.node.n_src = 1;
  b.node.src[0] = b.random(GgmlType::F32, ne);
  b.node.dst = b.output(GgmlType::F16, ne);
  for (auto _ : state) b.run();
  state.SetBytesProcessed(state.iterations() * kHeadDim * kKvHeads * kTokens * (4 + 2));
}

// Token embedding of a prefill from an F16 table [2048, 32000].
void BM_GetRowsF16(benchmark::State& state) {
  NodeBench b(static_cast<int>(state.range(0)));
  constexpr int64_t kVocab = 32000;
  b.node.op = PI_OP_GET_ROWS;
  b.node.n_src = 2;
  b.node.src[0] = b.random(GgmlType::F16, {kEmbd, kVocab, 1, 1});
  std::vector<uint8_t> ids(kTokens * 4);
  for (int64_t i = 0; i < kTokens; ++i) {
    const int32_t id = static_cast<int32_t>((i * 7919) % kVocab);
    std::memcpy(ids.data() + i * 4, &id, 4);
  }
  const Ne ids_ne{kTokens, 1, 1, 1};
  b.node.src[1] = b.upload(GgmlType::I32, ids_ne, contiguous_strides(GgmlType::I32, ids_ne), ids);
  b.node.dst = b.output(GgmlType::F32, {kEmbd, kTokens, 1, 1});
  for (auto _ : state) b.run();
  state.SetBytesProcessed(state.iterations() * kEmbd * kTokens * (2 + 4));
}

// Threads: 1 (the kernel alone) and every core of the machine.
void thread_counts(benchmark::internal::Benchmark* b) {
  b->Arg(1);
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (all > 1) b->Arg(all);
  b->ArgName("threads")->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK(BM_FlashAttnPrefill)->Apply(thread_counts);
BENCHMARK(BM_FlashAttnDecode)->Apply(thread_counts);
BENCHMARK(BM_RmsNorm)->Apply(thread_counts);
BENCHMARK(BM_Swiglu)->Apply(thread_counts);
BENCHMARK(BM_Add)->Apply(thread_counts);
BENCHMARK(BM_SoftMax)->Apply(thread_counts);
BENCHMARK(BM_CpyF32ToF16)->Apply(thread_counts);
BENCHMARK(BM_GetRowsF16)->Apply(thread_counts);

}  // namespace
}  // namespace polyinfer

BENCHMARK_MAIN();
