#include "backends/cuda/profiler.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace polyinfer::cuda {
namespace {

// Matrix products and attention differ by shape; every other op is cheap
// enough to be summed under its name.
std::string node_key(const pi_node& n) {
  std::string k = pi_op_name(n.op);
  if (n.op != PI_OP_MUL_MAT && n.op != PI_OP_FLASH_ATTN) return k;
  char buf[160];
  std::snprintf(buf, sizeof buf, " t%u %lldx%lld * %lld (nb1 %llu -> %llu)", n.src[0].type,
                static_cast<long long>(n.src[0].ne[0]), static_cast<long long>(n.src[0].ne[1]),
                static_cast<long long>(n.src[1].ne[1]),
                static_cast<unsigned long long>(n.src[1].nb[1]),
                static_cast<unsigned long long>(n.dst.nb[1]));
  return k + buf;
}

}  // namespace

ProfileMode profile_mode_from_env() {
  const char* e = std::getenv("POLYINFER_CUDA_PROFILE");
  if (e == nullptr || e[0] == '\0' || std::strcmp(e, "0") == 0) return ProfileMode::kOff;
  return std::strcmp(e, "host") == 0 ? ProfileMode::kHost : ProfileMode::kKernels;
}

Profiler::~Profiler() {
  for (Pending& p : pending_) {
    cudaEventDestroy(p.start);
    cudaEventDestroy(p.stop);
  }
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
}

cudaEvent_t Profiler::take_event() {
  if (free_.empty()) {
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    return e;
  }
  cudaEvent_t e = free_.back();
  free_.pop_back();
  return e;
}

void Profiler::begin_node(cudaStream_t s, const pi_node& n, const char* unit) {
  pending_.push_back({unit ? std::string(unit) + " (" + node_key(n) + ")" : node_key(n),
                      take_event(), take_event()});
  cudaEventRecord(pending_.back().start, s);
}

void Profiler::end_node(cudaStream_t s) {
  cudaEventRecord(pending_.back().stop, s);
}

void Profiler::collect() {
  for (Pending& p : pending_) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, p.start, p.stop) == cudaSuccess) {
      Sum& sum = kernels_[p.key];
      ++sum.count;
      sum.ms += ms;
    }
    free_.push_back(p.start);
    free_.push_back(p.stop);
  }
  pending_.clear();
  cudaGetLastError();
}

void Profiler::add_submit(const char* action, double ms) {
  Sum& sum = submits_[action];
  ++sum.count;
  sum.ms += ms;
}

void Profiler::add_step(const char* step, double ms) {
  Sum& sum = steps_[step];
  ++sum.count;
  sum.ms += ms;
}

std::string Profiler::report() const {
  std::string out;
  char line[256];
  const auto table = [&](const char* title, const std::map<std::string, Sum>& sums) {
    if (sums.empty()) return;
    std::vector<std::pair<std::string, Sum>> rows(sums.begin(), sums.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    double total = 0;
    for (const auto& r : rows) total += r.second.ms;
    std::snprintf(line, sizeof line, "CUDA profile, %s: %.3f ms in all\n", title, total);
    out += line;
    for (const auto& [key, sum] : rows) {
      std::snprintf(line, sizeof line, "  %9.3f ms %5.1f %% %8ld x %9.2f us  %s\n", sum.ms,
                    100.0 * sum.ms / total, sum.count, 1000.0 * sum.ms / sum.count, key.c_str());
      out += line;
    }
  };
  table("GPU time per node", kernels_);
  table("host time per submit", submits_);
  table("host time per submit step", steps_);
  return out;
}

}  // namespace polyinfer::cuda
