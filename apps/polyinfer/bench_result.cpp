// BenchResult's statistics and test name.
#include <cmath>
#include <numeric>

#include "bench_report.hpp"
#include "polyinfer/error.hpp"

namespace polyinfer::cli {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "bench: " + what);
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Two passes (mean, then squared deviations): no cancellation when the spread is
// small next to the mean, as it is for repeated timings.
double sample_stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean(v);
  double sum_sq = 0.0;
  for (const double x : v) sum_sq += (x - m) * (x - m);
  return std::sqrt(sum_sq / static_cast<double>(v.size() - 1));
}

// The samples, once the test is valid and each is a positive, finite duration.
const std::vector<double>& checked_ns(const BenchResult& r) {
  const std::string test = r.test_name();
  if (r.samples_ns.empty()) invalid(test + " has no timing sample");
  for (const double ns : r.samples_ns) {
    if (!(ns > 0.0 && std::isfinite(ns))) {
      invalid(test + " has a sample of " + std::to_string(ns) + " ns");
    }
  }
  return r.samples_ns;
}

}  // namespace

std::string BenchResult::test_name() const {
  if (n_prompt < 0 || n_gen < 0 || (n_prompt == 0 && n_gen == 0)) {
    invalid("a test needs n_prompt >= 0, n_gen >= 0 and one of them > 0, got " +
            std::to_string(n_prompt) + " and " + std::to_string(n_gen));
  }
  if (n_gen == 0) return "pp" + std::to_string(n_prompt);
  if (n_prompt == 0) return "tg" + std::to_string(n_gen);
  return "pp" + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen);
}

std::vector<double> BenchResult::samples_tps() const {
  const double n_tokens = static_cast<double>(n_prompt) + static_cast<double>(n_gen);
  std::vector<double> tps;
  for (const double ns : checked_ns(*this)) tps.push_back(1e9 * n_tokens / ns);
  return tps;
}

double BenchResult::mean_tps() const {
  return mean(samples_tps());
}
double BenchResult::stddev_tps() const {
  return sample_stddev(samples_tps());
}
double BenchResult::mean_ns() const {
  return mean(checked_ns(*this));
}
double BenchResult::stddev_ns() const {
  return sample_stddev(checked_ns(*this));
}

}  // namespace polyinfer::cli
