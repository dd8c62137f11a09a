#include "backends/cuda/graph_keys.hpp"

#include <cstring>

#include "backends/cuda/tensor_rules.hpp"

namespace polyinfer::cuda {
namespace {

// Which fields of a tensor stay out of the signature (decode_fields.hpp).
enum Leave : unsigned {
  kNone = 0,
  kLength = 1,     // ne[1]: a K or V view's positions
  kMaskShape = 2,  // ne[0]: the mask's positions
  kOffset = 4,     // a cache write's destination row
};

void put_tensor(std::vector<uint64_t>& k, const pi_tensor& t, BufferAddress address,
                unsigned leave = kNone) {
  k.push_back(t.type);
  for (int d = 0; d < 4; ++d) {
    const bool out = (d == 1 && (leave & kLength)) || (d == 0 && (leave & kMaskShape));
    k.push_back(out ? 0 : static_cast<uint64_t>(t.ne[d]));
  }
  // The strides of a per-token tensor's unit dimensions address nothing,
  // and may follow its length (a KV view's nb[3] is n_kv rows).
  for (int d = 0; d < 4; ++d) k.push_back(leave != kNone && d > 0 && t.ne[d] == 1 ? 0 : t.nb[d]);
  k.push_back(t.buffer ? address(t.buffer) : 0);
  k.push_back(leave & kOffset ? 0 : t.offset);
}

// A node's sources and destination, less its per-token fields.
void put_operands(std::vector<uint64_t>& k, const pi_node& n, BufferAddress address,
                  bool per_token) {
  const bool attn = per_token && n.op == PI_OP_FLASH_ATTN;
  for (uint32_t s = 0; s < PI_MAX_SRC; ++s) {
    if (!n.src[s].buffer) continue;  // the topology says which sources are absent
    unsigned leave = kNone;
    if (attn && (s == 1 || s == 2)) leave = kLength;
    if (attn && s == 3) leave = kMaskShape;
    put_tensor(k, n.src[s], address, leave);
  }
  put_tensor(k, n.dst, address, per_token && n.op == PI_OP_CPY ? kOffset : kNone);
  // The attention's grid and kernel follow its split count: a change there
  // is a change of graph.
  if (attn) k.push_back(static_cast<uint64_t>(flash_decode_splits(n.src[1].ne[1])));
}

}  // namespace

// Field by field: pi_node has padding bytes, whose values are not part of
// the graph.
GraphKeys graph_keys(const pi_graph& g, const std::vector<Unit>& units, const DecodeFields& fields,
                     BufferAddress address) {
  GraphKeys k;
  k.topology.reserve(1 + static_cast<size_t>(g.n_nodes) * (3 + PI_MAX_SRC));
  k.topology.push_back(g.n_nodes);
  k.full.reserve(static_cast<size_t>(g.n_nodes) * (2 + 11 * (PI_MAX_SRC + 1) + 8) +
                 4 * units.size());
  k.node_end.reserve(g.n_nodes);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    k.topology.push_back(n.op);
    k.topology.push_back(n.n_src);
    for (uint32_t s = 0; s < PI_MAX_SRC; ++s)
      k.topology.push_back(n.src[s].buffer ? n.src[s].type : ~0u);
    k.topology.push_back(n.dst.type);
    k.full.push_back(n.op);
    put_operands(k.full, n, address, !fields.slot.empty() && fields.slot[i] >= 0);
    // The parameters two to an entry: the key is built and compared at every
    // submit (57 us of host time per llama-8b token at one per entry).
    for (int j = 0; j < 8; j += 2) {
      k.full.push_back(static_cast<uint64_t>(static_cast<uint32_t>(n.i[j])) << 32 |
                       static_cast<uint32_t>(n.i[j + 1]));
    }
    for (int j = 0; j < 8; j += 2) {
      uint32_t bits[2];
      std::memcpy(bits, &n.f[j], 8);
      k.full.push_back(static_cast<uint64_t>(bits[0]) << 32 | bits[1]);
    }
    k.node_end.push_back(static_cast<uint32_t>(k.full.size()));
  }
  // The units, after the last node: a graph cut otherwise launches other kernels.
  for (const Unit& u : units) {
    k.full.push_back(u.first);
    k.full.push_back(u.count);
    k.full.push_back(static_cast<uint64_t>(u.kind));
    k.full.push_back((u.quantize_next ? 1u : 0u) | (u.quantize_residual ? 2u : 0u) |
                     (u.spread ? 4u : 0u) | (u.half_next ? 8u : 0u) | (u.half_bf16 ? 16u : 0u));
  }
  return k;
}

}  // namespace polyinfer::cuda
