#include "backends/cpu/graph_work.hpp"

#include "backends/cpu/op_context.hpp"

namespace polyinfer::cpu {
namespace {

uint64_t node_work(const pi_node& n) {
  uint64_t inner = 1;
  if (n.op == PI_OP_MUL_MAT) inner = static_cast<uint64_t>(n.src[0].ne[0]);
  if (n.op == PI_OP_FLASH_ATTN) inner = static_cast<uint64_t>(n.src[0].ne[0] * n.src[1].ne[1]);
  return static_cast<uint64_t>(nelements(n.dst)) * inner;
}

}  // namespace

uint64_t graph_work(const pi_graph& g) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < g.n_nodes; ++i) sum += node_work(g.nodes[i]);
  return sum;
}

}  // namespace polyinfer::cpu
