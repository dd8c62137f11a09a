// Parallel production, in-order consumption: chunks are produced on worker threads
// in any order and handed to the consumer on the calling thread strictly in index
// order, with a bounded number in flight (so memory stays bounded too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace polyinfer {

using ChunkProducer = std::function<void(size_t index, std::vector<uint8_t>& out)>;
using ChunkConsumer = std::function<void(size_t index, const std::vector<uint8_t>& data)>;

// Runs produce(k) for k in [0, n_chunks) on n_threads workers and consume(k) on the
// caller in order; at most `window` chunks are produced but not yet consumed. The
// first exception from either side stops the work and is rethrown.
void run_ordered(size_t n_chunks, unsigned n_threads, size_t window, const ChunkProducer& produce,
                 const ChunkConsumer& consume);

}  // namespace polyinfer
