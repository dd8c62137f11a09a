// A submitted graph described twice for the CUDA graph cache
// (graph_cache.hpp): its topology (ops, types, node count) and its full
// signature (every shape, stride, buffer, offset and parameter, and how the
// nodes are cut into fused units), kept per node. The per-token fields of
// decode_fields.hpp are left out of the signature: the kernels read them from
// device memory. Host code with no CUDA header
// (tests/unit/test_cuda_graph_keys.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cuda/decode_fields.hpp"
#include "backends/cuda/fusion.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

struct GraphKeys {
  std::vector<uint64_t> topology;
  std::vector<uint64_t> full;
  std::vector<uint32_t> node_end;  // node i's signature is full[node_end[i-1], node_end[i])
};

// A buffer's device address: its identity within the process (a freed
// handle may come back as another buffer's), kept in the key as an integer.
using BufferAddress = uint64_t (*)(pi_buffer);

GraphKeys graph_keys(const pi_graph& g, const std::vector<Unit>& units, const DecodeFields& fields,
                     BufferAddress address);

}  // namespace polyinfer::cuda
