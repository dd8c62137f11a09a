// polyinfer-bench-membw: STREAM-like memory bandwidth of this machine, the
// ceiling for decode (tg), which streams every weight once per token.
//
//   polyinfer-bench-membw [-t THREADS] [--mib SIZE] [-r REPS]
//
// Copy: a[i] = b[i] over two arrays far larger than the caches; bandwidth counts
// bytes read plus bytes written (as STREAM's Copy). Read: a sum over one array,
// counting bytes read (what a matrix-vector product does). Best of REPS.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double best_seconds(int reps, int threads, F body) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
    for (auto& th : pool) th.join();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"STREAM-like memory bandwidth"};
  int threads = 2, reps = 5;
  size_t mib = 1024;
  app.add_option("-t,--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--mib", mib, "Size of each array in MiB")->check(CLI::Range(64, 1 << 16));
  app.add_option("-r,--reps", reps)->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  const size_t n = mib * 1024 * 1024 / sizeof(double);
  std::vector<double> a(n), b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<double>(i % 1000) * 0.5;
  const size_t per = n / threads;
  std::vector<double> sums(threads);

  const double copy_s = best_seconds(reps, threads, [&](int t) {
    std::memcpy(a.data() + t * per, b.data() + t * per, per * sizeof(double));
  });
  const double read_s = best_seconds(reps, threads, [&](int t) {
    // Eight independent sums so the adds keep up with memory.
    double s[8] = {};
    const double* p = b.data() + t * per;
    for (size_t i = 0; i + 8 <= per; i += 8) {
      for (int j = 0; j < 8; ++j) s[j] += p[i + j];
    }
    sums[t] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
  });
  const double bytes = static_cast<double>(per) * threads * sizeof(double);
  std::printf("threads %d, arrays %zu MiB, best of %d\n", threads, mib, reps);
  std::printf("copy: %.1f GB/s (read + write)\n", 2 * bytes / copy_s / 1e9);
  std::printf("read: %.1f GB/s (checksum %g)\n", bytes / read_s / 1e9, sums[0]);
  return 0;
}
