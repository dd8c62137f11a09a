// CPU MUL_MAT throughput per weight type:
//   polyinfer-bench-matmul [--hwy_target=NAME] [benchmark flags]
// --hwy_target runs a lesser Highway target this CPU also supports (e.g.
// AVX2, SSE4) instead of the best one.
// Runs kOpMulMat (activation conversion + tiled GEMM) on the backend's
// ThreadPool with 1 and 2 threads, for
//   decode:      a 4096 x 4096 weight matrix times one column (matrix-vector)
//   decode_dram: 32768 rows of 4096 times one column: weights (72-512 MiB)
//                far beyond the 32 MiB L3, so they stream from DRAM
//   prefill:     a 2048 x 2048 weight matrix times 512 columns
// and reports GFLOP/s (2 * rows * cols * k per run) and the weight bytes
// streamed per second (GB/s, 10^9). Weights: 16 quantized random rows
// repeated (speed does not depend on the values); activations: random normal.
//
// llama1b_matmuls: every weight matmul of one token step (M = 1) or of a
// 512-token batch (M = 512) of the llama-1b preset (16 layers of q, k, v, o,
// gate, up, down; the 32000-row output), each matrix its own weights in the
// type llama.cpp's recipe gives it for the file type (tensor_recipe.hpp), run
// as one graph (a barrier after each node, as the CPU backend does); reports
// tokens/s. Attention, norms and the other ops are not included, so this is
// an upper bound of what the matmuls allow.
#define HWY_WANT_AVX3_DL
#include <benchmark/benchmark.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/matmul/matmul_kernels.hpp"
#include "backends/cpu/op_context.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/fp16.hpp"
#include "polyinfer/quant.hpp"
#include "polyinfer/tensor_recipe.hpp"

namespace {

using polyinfer::GgmlType;
namespace cpu = polyinfer::cpu;

std::vector<float> normal_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

// 16 distinct rows of k elements in the type's format (random bytes with
// finite f16 scales for the types without a reference quantizer).
std::vector<uint8_t> sample_rows(GgmlType type, int64_t k) {
  const size_t row_bytes = polyinfer::row_size(type, k);
  std::vector<uint8_t> rows(16 * row_bytes);
  const std::vector<float> x = normal_floats(static_cast<size_t>(16 * k), 7);
  if (polyinfer::traits(type).quantizable) {
    for (int r = 0; r < 16; ++r)
      polyinfer::quantize_row(type, x.data() + r * k, rows.data() + r * row_bytes, k);
    return rows;
  }
  std::mt19937 rng(11);
  for (uint8_t& b : rows) b = static_cast<uint8_t>(rng());
  const auto& t = polyinfer::traits(type);
  const size_t d_offset = type == GgmlType::Q2_K ? 80 : 108;  // Q2_K (d, dmin) / Q3_K (d)
  for (size_t b = 0; b < rows.size() / t.type_size; ++b) {
    for (size_t f = d_offset; f + 2 <= t.type_size; f += 2) {
      const uint16_t h = polyinfer::fp32_to_fp16(0.01f * (1 + static_cast<float>(b % 7)));
      std::memcpy(rows.data() + b * t.type_size + f, &h, 2);
    }
  }
  return rows;
}

pi_tensor tensor(GgmlType type, int64_t ne0, int64_t ne1, size_t row_bytes, void* data) {
  pi_tensor t{};
  t.type = static_cast<uint32_t>(type);
  t.ne[0] = ne0;
  t.ne[1] = ne1;
  t.ne[2] = t.ne[3] = 1;
  t.nb[0] = polyinfer::traits(type).type_size;
  t.nb[1] = row_bytes;
  t.nb[2] = t.nb[3] = row_bytes * static_cast<size_t>(ne1);
  t.buffer = reinterpret_cast<pi_buffer>(data);  // a CPU buffer handle is its host address
  return t;
}

void bench_mul_mat(benchmark::State& state, GgmlType type, int64_t k, int64_t n, int64_t m,
                   int threads) {
  const size_t row_bytes = polyinfer::row_size(type, k);
  const std::vector<uint8_t> sample = sample_rows(type, k);
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    std::memcpy(w.data() + r * row_bytes, sample.data() + (r % 16) * row_bytes, row_bytes);
  }
  std::vector<float> a = normal_floats(static_cast<size_t>(k * m), 3);
  std::vector<float> d(static_cast<size_t>(n * m));
  pi_node node{};
  node.op = PI_OP_MUL_MAT;
  node.n_src = 2;
  node.src[0] = tensor(type, k, n, row_bytes, w.data());
  node.src[1] = tensor(GgmlType::F32, k, m, 4 * static_cast<size_t>(k), a.data());
  node.dst = tensor(GgmlType::F32, n, m, 4 * static_cast<size_t>(n), d.data());
  if (!cpu::kOpMulMat.supports(node)) {
    state.SkipWithError("unsupported");
    return;
  }
  cpu::ThreadPool pool(threads);
  std::vector<uint8_t> work(cpu::kOpMulMat.work_size(node, threads) + 64);
  const std::span<uint8_t> scratch(
      work.data() + (64 - reinterpret_cast<uintptr_t>(work.data()) % 64) % 64,
      cpu::kOpMulMat.work_size(node, threads));
  const auto job = [&](int ith) {
    cpu::kOpMulMat.run(cpu::OpContext{node, ith, threads, pool.barrier(), scratch});
  };
  for (auto _ : state) {
    pool.run(job);
    benchmark::DoNotOptimize(d.data());
  }
  const double runs = static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * static_cast<double>(k * n * m) * runs, benchmark::Counter::kIsRate);
  state.counters["GB/s"] =
      benchmark::Counter(1e-9 * static_cast<double>(w.size()) * runs, benchmark::Counter::kIsRate);
  state.SetLabel(cpu::simd_target_name());
}

// One weight matmul of the model: name, rows (n) and row length (k).
struct ModelMatmul {
  std::string name;
  int64_t k, n;
  int layer;
};

std::vector<ModelMatmul> llama1b_matmuls() {
  constexpr int kLayers = 16;
  constexpr int64_t kEmbd = 2048, kKv = 512, kFf = 8192, kVocab = 32000;
  std::vector<ModelMatmul> out;
  for (int l = 0; l < kLayers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    out.push_back({b + "attn_q.weight", kEmbd, kEmbd, l});
    out.push_back({b + "attn_k.weight", kEmbd, kKv, l});
    out.push_back({b + "attn_v.weight", kEmbd, kKv, l});
    out.push_back({b + "attn_output.weight", kEmbd, kEmbd, l});
    out.push_back({b + "ffn_gate.weight", kEmbd, kFf, l});
    out.push_back({b + "ffn_up.weight", kEmbd, kFf, l});
    out.push_back({b + "ffn_down.weight", kFf, kEmbd, l});
  }
  out.push_back({"output.weight", kEmbd, kVocab, -1});
  return out;
}

void bench_llama1b(benchmark::State& state, polyinfer::FileType ft, int64_t m, int threads) {
  constexpr int kLayers = 16;
  const std::vector<ModelMatmul> mats = llama1b_matmuls();
  // Activations and outputs are shared by all nodes (any values will do).
  const std::vector<float> a = normal_floats(static_cast<size_t>(8192 * m), 3);
  std::vector<float> d(static_cast<size_t>(32000 * m));
  std::vector<std::vector<uint8_t>> weights;
  std::vector<pi_node> nodes;
  size_t work_bytes = 0, weight_bytes = 0;
  double flops = 0;
  for (const ModelMatmul& mm : mats) {
    const GgmlType type = polyinfer::tensor_type(
        ft, {mm.name, 2, mm.k, mm.layer, kLayers, mm.name == "output.weight"});
    const size_t row_bytes = polyinfer::row_size(type, mm.k);
    const std::vector<uint8_t> sample = sample_rows(type, mm.k);
    std::vector<uint8_t>& w = weights.emplace_back(row_bytes * static_cast<size_t>(mm.n));
    for (int64_t r = 0; r < mm.n; ++r) {
      std::memcpy(w.data() + r * row_bytes, sample.data() + (r % 16) * row_bytes, row_bytes);
    }
    pi_node node{};
    node.op = PI_OP_MUL_MAT;
    node.n_src = 2;
    node.src[0] = tensor(type, mm.k, mm.n, row_bytes, w.data());
    node.src[1] =
        tensor(GgmlType::F32, mm.k, m, 4 * static_cast<size_t>(mm.k), const_cast<float*>(a.data()));
    node.dst = tensor(GgmlType::F32, mm.n, m, 4 * static_cast<size_t>(mm.n), d.data());
    if (!cpu::kOpMulMat.supports(node)) {
      state.SkipWithError("unsupported");
      return;
    }
    work_bytes = std::max(work_bytes, cpu::kOpMulMat.work_size(node, threads));
    weight_bytes += w.size();
    flops += 2.0 * static_cast<double>(mm.k * mm.n * m);
    nodes.push_back(node);
  }
  cpu::ThreadPool pool(threads);
  std::vector<uint8_t> work(work_bytes + 64);
  const std::span<uint8_t> scratch(
      work.data() + (64 - reinterpret_cast<uintptr_t>(work.data()) % 64) % 64, work_bytes);
  const auto job = [&](int ith) {
    for (const pi_node& node : nodes) {
      cpu::kOpMulMat.run(cpu::OpContext{node, ith, threads, pool.barrier(), scratch});
      pool.barrier().wait();
    }
  };
  for (auto _ : state) {
    pool.run(job);
    benchmark::DoNotOptimize(d.data());
  }
  const double runs = static_cast<double>(state.iterations());
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(m) * runs, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(1e-9 * flops * runs, benchmark::Counter::kIsRate);
  state.counters["GB/s"] = benchmark::Counter(1e-9 * static_cast<double>(weight_bytes) * runs,
                                              benchmark::Counter::kIsRate);
  state.SetLabel(std::string(cpu::simd_target_name()) + ", weights " +
                 std::to_string(weight_bytes >> 20) + " MiB");
}

}  // namespace

// Applies and removes a --hwy_target=NAME argument; false if NAME is not a
// target this CPU runs.
bool apply_target_flag(int& argc, char** argv) {
  const std::string prefix = "--hwy_target=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(prefix, 0) != 0) continue;
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
    for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
      if (arg.substr(prefix.size()) == hwy::TargetName(target)) {
        hwy::SetSupportedTargetsForTest(target);
        return true;
      }
    }
    return false;
  }
  return true;
}

int main(int argc, char** argv) {
  if (!apply_target_flag(argc, argv)) {
    std::fprintf(stderr, "--hwy_target: not a Highway target this CPU runs\n");
    return 2;
  }
  for (const GgmlType type : polyinfer::kComputeTypes) {
    const std::string name(polyinfer::type_name(type));
    for (const int threads : {1, 2}) {
      const std::string t = "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(("decode_4096x4096/" + name + t).c_str(), bench_mul_mat, type,
                                   4096, 4096, 1, threads)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("decode_dram_32768x4096/" + name + t).c_str(), bench_mul_mat,
                                   type, 4096, 32768, 1, threads)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("prefill_2048x2048x512/" + name + t).c_str(), bench_mul_mat,
                                   type, 2048, 2048, 512, threads)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const auto ft : {polyinfer::FileType::F16, polyinfer::FileType::Q8_0,
                        polyinfer::FileType::Q4_0, polyinfer::FileType::Q4_K_M}) {
    const std::string name(polyinfer::file_type_name(ft));
    for (const int threads : {1, 2}) {
      const std::string t = "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(("llama1b_matmuls_decode/" + name + t).c_str(), bench_llama1b,
                                   ft, 1, threads)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("llama1b_matmuls_prefill512/" + name + t).c_str(),
                                   bench_llama1b, ft, 512, threads)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
