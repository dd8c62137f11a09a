// Streams a ModelPlan to a GGUF file: the header first, then every tensor generated
// and quantized in row chunks on all cores, written in order as chunks complete.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "model/ordered_pipeline.hpp"
#include "polyinfer/gen_model.hpp"
#include "polyinfer/gguf_writer.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer {
namespace {

// About this many bytes of float32 rows per chunk: large enough to amortise the
// hand-offs, small enough that a window of chunks per thread costs little memory.
constexpr int64_t kChunkFloatBytes = int64_t{4} << 20;
constexpr size_t kChunksInFlightPerThread = 2;

struct Chunk {
  size_t tensor;
  int64_t row_begin;
  int64_t n_rows;
};

std::vector<Chunk> split_rows(const ModelPlan& plan) {
  std::vector<Chunk> chunks;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const PlannedTensor& t = plan.tensors[i];
    const int64_t ne0 = t.ne[0];
    const int64_t rows = t.n_elements() / ne0;
    const int64_t step = std::max<int64_t>(1, kChunkFloatBytes / (ne0 * 4));
    for (int64_t r = 0; r < rows; r += step) chunks.push_back({i, r, std::min(step, rows - r)});
  }
  return chunks;
}

void produce_chunk(const ModelPlan& plan, const Chunk& c, std::vector<uint8_t>& out) {
  const PlannedTensor& t = plan.tensors[c.tensor];
  const int64_t ne0 = t.ne[0];
  std::vector<float> rows(static_cast<size_t>(c.n_rows * ne0));
  fill_weight_rows(t.kind, tensor_stream_key(plan.seed, t.name), ne0, c.row_begin, c.n_rows,
                   rows.data());
  const size_t row_bytes = row_size(t.type, ne0);
  out.resize(row_bytes * static_cast<size_t>(c.n_rows));
  for (int64_t r = 0; r < c.n_rows; ++r) {
    quantize_row(t.type, rows.data() + r * ne0, out.data() + r * row_bytes, ne0);
  }
}

void stream_data(const ModelPlan& plan, GgufWriter& w, const GenProgress& progress,
                 unsigned n_threads) {
  const std::vector<Chunk> chunks = split_rows(plan);
  const uint64_t total = plan.data_bytes();
  uint64_t done = 0;
  run_ordered(
      chunks.size(), n_threads, kChunksInFlightPerThread * n_threads,
      [&](size_t k, std::vector<uint8_t>& out) { produce_chunk(plan, chunks[k], out); },
      [&](size_t, const std::vector<uint8_t>& data) {
        w.write_data(data.data(), data.size());
        done += data.size();
        if (progress) progress(done, total);
      });
}

}  // namespace

GenModelStats write_model(const ModelPlan& plan, const std::string& path,
                          const GenProgress& progress, unsigned n_threads) {
  const auto start = std::chrono::steady_clock::now();
  if (n_threads == 0) n_threads = std::max(1u, std::thread::hardware_concurrency());
  GgufWriter w;
  for (const GgufKv& kv : plan.metadata) w.set(kv.key, kv.value);
  for (const PlannedTensor& t : plan.tensors) w.add_tensor(t.name, t.type, t.ne);
  FileSink sink(path);  // fails on an unwritable path before any work is done
  try {
    w.begin(sink);
    stream_data(plan, w, progress, n_threads);
    w.finish();
    sink.close();
  } catch (...) {
    std::remove(path.c_str());  // no half-written model left behind
    throw;
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return {std::filesystem::file_size(path), elapsed.count()};
}

}  // namespace polyinfer
