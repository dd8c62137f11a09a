#include "backends/cpu/thread_pool.hpp"

#include <sched.h>

#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace polyinfer::cpu {

void ThreadBarrier::wait() {
  if (n_ == 1) return;
  const uint32_t phase = phase_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
    arrived_.store(0, std::memory_order_relaxed);
    phase_.fetch_add(1, std::memory_order_release);
    return;
  }
  // Ops between barriers take microseconds: spinning beats sleeping, but give
  // the core away when the wait is long (more threads than cores).
  for (int spin = 0; phase_.load(std::memory_order_acquire) == phase; ++spin) {
    if (spin > 4096) std::this_thread::yield();
  }
}

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), barrier_(n_threads_) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int)>& job) {
  {
    std::lock_guard lock(mutex_);
    job_ = &job;
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  job(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker(int ith) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(ith);
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

int physical_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    const unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(hc);
  }
  std::set<std::pair<std::string, std::string>> cores;
  int allowed = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    ++allowed;
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    const std::string core = read_line(dir + "core_id");
    if (core.empty()) continue;
    cores.emplace(read_line(dir + "physical_package_id"), core);
  }
  if (cores.empty()) return allowed < 1 ? 1 : allowed;
  return static_cast<int>(cores.size());
}

}  // namespace polyinfer::cpu
