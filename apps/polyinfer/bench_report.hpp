// `polyinfer bench` results and their reports, shaped like llama-bench's so the two
// can be read side by side: one result per (model, threads, test), one wall-time
// sample per repetition, throughput as the mean and sample standard deviation of
// the per-repetition tokens/s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace polyinfer::cli {

struct BenchResult {
  std::string model_desc;    // "<arch> <size class> <file type>", e.g. "llama 1B Q4_0"
  uint64_t model_bytes = 0;  // tensor data, bytes
  uint64_t n_params = 0;     // parameter count
  std::string backend;       // e.g. "CPU"
  int n_threads = 0;
  int n_prompt = 0;                // prompt tokens processed in one batch (pp), 0 if none
  int n_gen = 0;                   // tokens generated one at a time (tg), 0 if none
  std::vector<double> samples_ns;  // wall time of the whole test, one per repetition, ns

  // Tokens/s of each repetition: 1e9 * (n_prompt + n_gen) / sample_ns; then their
  // mean and sample standard deviation (n - 1 denominator; 0 for one sample), as
  // llama-bench computes them. Throw Error(kInvalidArgument) when there is no sample,
  // a sample is not a positive finite duration, or test_name() would throw.
  std::vector<double> samples_tps() const;
  double mean_tps() const;
  double stddev_tps() const;
  // The same statistics of samples_ns (llama-bench's avg_ns and stddev_ns), same errors.
  double mean_ns() const;
  double stddev_ns() const;

  // "pp512", "tg128" or "pp512+tg128". Throws Error(kInvalidArgument) when a count is
  // negative or both are 0.
  std::string test_name() const;
};

// llama-bench's markdown table, one row per result:
//   | model | size | params | backend | threads | test | t/s |
// size in MiB below 1 GiB, else GiB; params in M below 10^9, else B (both with two
// decimals); t/s as "mean ± stddev" with two decimals. Columns are padded to their
// widest cell (in characters, so "±" counts once). Ends with a newline.
std::string format_markdown(const std::vector<BenchResult>& results);

// A header line and one line per result, every field double-quoted:
//   model_type,model_size,model_n_params,backends,n_threads,n_prompt,n_gen,test,
//   avg_ns,stddev_ns,avg_ts,stddev_ts
// (llama-bench's names; sizes in bytes, times in whole ns, rates with 6 decimals).
std::string format_csv(const std::vector<BenchResult>& results);

// A JSON array with one object per result: the CSV's fields (numbers as numbers,
// avg/stddev_ns unrounded) plus "samples_ns" and "samples_ts", one per repetition.
std::string format_json(const std::vector<BenchResult>& results);

}  // namespace polyinfer::cli
