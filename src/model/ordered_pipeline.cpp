#include "model/ordered_pipeline.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace polyinfer {
namespace {

class OrderedPipeline {
 public:
  OrderedPipeline(size_t n_chunks, size_t window, const ChunkProducer& produce)
      : n_(n_chunks), slots_(window), produce_(produce) {}

  void worker() {
    for (;;) {
      size_t k;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return failed_ || next_ >= n_ || next_ < consumed_ + slots_.size(); });
        if (failed_ || next_ >= n_) return;
        k = next_++;
      }
      Slot& slot = slots_[k % slots_.size()];
      try {
        produce_(k, slot.data);
      } catch (...) {
        fail(std::current_exception());
        return;
      }
      {
        std::lock_guard lock(m_);
        slot.ready = true;
      }
      cv_.notify_all();
    }
  }

  void consume_all(const ChunkConsumer& consume) {
    for (size_t k = 0; k < n_; ++k) {
      Slot& slot = slots_[k % slots_.size()];
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return failed_ || slot.ready; });
        if (failed_) return;
      }
      try {
        consume(k, slot.data);
      } catch (...) {
        fail(std::current_exception());
        return;
      }
      {
        std::lock_guard lock(m_);
        slot.ready = false;
        consumed_ = k + 1;
      }
      cv_.notify_all();
    }
  }

  void rethrow_if_failed() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  struct Slot {
    std::vector<uint8_t> data;
    bool ready = false;
  };

  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(m_);
      if (!error_) error_ = e;
      failed_ = true;
    }
    cv_.notify_all();
  }

  const size_t n_;
  std::vector<Slot> slots_;
  const ChunkProducer& produce_;
  std::mutex m_;
  std::condition_variable cv_;
  size_t next_ = 0;      // next chunk to hand to a worker
  size_t consumed_ = 0;  // chunks consumed so far
  bool failed_ = false;
  std::exception_ptr error_;
};

}  // namespace

void run_ordered(size_t n_chunks, unsigned n_threads, size_t window, const ChunkProducer& produce,
                 const ChunkConsumer& consume) {
  OrderedPipeline pipeline(n_chunks, window < 1 ? 1 : window, produce);
  std::vector<std::jthread> workers;
  for (unsigned i = 0; i < (n_threads < 1 ? 1 : n_threads); ++i) {
    workers.emplace_back([&pipeline] { pipeline.worker(); });
  }
  pipeline.consume_all(consume);
  workers.clear();  // joins
  pipeline.rethrow_if_failed();
}

}  // namespace polyinfer
