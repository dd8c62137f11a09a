// The CPU backend's threads. A graph is handed to the pool once; every thread
// then walks all nodes, meeting at a barrier after each, so one wake-up covers
// a whole graph (waking threads per node costs more than small ops do).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace polyinfer::cpu {

// Reusable barrier for a fixed number of threads. Spins briefly, then yields,
// so it stays correct (if slower) when threads outnumber cores.
class ThreadBarrier {
 public:
  explicit ThreadBarrier(int n_threads) : n_(n_threads) {}
  void wait();

 private:
  const int n_;
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> phase_{0};
};

class ThreadPool {
 public:
  // n_threads >= 1; the calling thread is thread 0, so n_threads - 1 are spawned.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  ThreadBarrier& barrier() { return barrier_; }
  // Runs job(ith) on every thread (ith = 0 on the caller) and returns when all finished.
  void run(const std::function<void(int)>& job);

 private:
  void worker(int ith);

  const int n_threads_;
  ThreadBarrier barrier_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Physical cores this process may run on (SMT siblings counted once); at least 1.
int physical_core_count();

}  // namespace polyinfer::cpu
