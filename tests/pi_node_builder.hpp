// A plugin-ABI node from its op, sources and destination: the graphs that
// tests/conformance/test_decode_graph.cpp runs and tests/unit/test_cuda_fusion.cpp
// plans are built node by node from these.
#pragma once

#include <algorithm>
#include <initializer_list>

#include "polyinfer/backend/abi.h"

namespace polyinfer::test_graph {

// srcs: at most PI_MAX_SRC tensors, in the op's source order (include/polyinfer/backend/abi.h).
inline pi_node node(pi_op op, std::initializer_list<pi_tensor> srcs, const pi_tensor& dst) {
  pi_node n{};
  n.op = op;
  n.n_src = static_cast<uint32_t>(srcs.size());
  std::copy(srcs.begin(), srcs.end(), n.src);
  n.dst = dst;
  return n;
}

}  // namespace polyinfer::test_graph
