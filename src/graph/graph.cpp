#include "graph/graph.hpp"

#include <algorithm>

#include "polyinfer/error.hpp"

namespace polyinfer {

Strides contiguous_strides(GgmlType type, const Shape& ne) {
  const TypeTraits& tt = traits(type);
  Strides nb;
  nb[0] = tt.type_size;
  nb[1] = row_size(type, ne[0]);
  nb[2] = nb[1] * ne[1];
  nb[3] = nb[2] * ne[2];
  return nb;
}

TensorId Graph::add(GraphTensor t) {
  tensors_.push_back(t);
  if (tensors_.back().base < 0) tensors_.back().base = static_cast<TensorId>(tensors_.size() - 1);
  return static_cast<TensorId>(tensors_.size() - 1);
}

uint64_t span_bytes(const GraphTensor& t) {
  uint64_t span = row_size(t.type, t.ne[0]);
  for (int d = 1; d < 4; ++d) span += static_cast<uint64_t>(t.ne[d] - 1) * t.nb[d];
  return span;
}

TensorId Graph::bound(GgmlType type, const Shape& ne, pi_buffer buffer, uint64_t offset,
                      int32_t device) {
  return bound(type, ne, contiguous_strides(type, ne), buffer, offset, device);
}

TensorId Graph::bound(GgmlType type, const Shape& ne, const Strides& nb, pi_buffer buffer,
                      uint64_t offset, int32_t device) {
  return add({type, ne, nb, StorageKind::kBound, -1, offset, buffer, false, device});
}

TensorId Graph::scratch(GgmlType type, const Shape& ne, int32_t device) {
  return add({type, ne, contiguous_strides(type, ne), StorageKind::kIntermediate, -1, 0, nullptr,
              false, device});
}

TensorId Graph::input(GgmlType type, const Shape& ne) {
  return add({type, ne, contiguous_strides(type, ne), StorageKind::kInput, -1});
}

TensorId Graph::op(pi_op op, std::span<const TensorId> srcs, GgmlType type, const Shape& ne,
                   std::span<const int32_t> iparams, std::span<const float> fparams) {
  const TensorId dst = scratch(type, ne, device_);
  op_into(op, srcs, dst);
  std::copy(iparams.begin(), iparams.end(), nodes_.back().i.begin());
  std::copy(fparams.begin(), fparams.end(), nodes_.back().f.begin());
  return dst;
}

void Graph::op_into(pi_op op, std::span<const TensorId> srcs, TensorId dst) {
  GraphNode n{op, {-1, -1, -1, -1}, dst};
  std::copy(srcs.begin(), srcs.end(), n.src.begin());
  n.device = device_;
  nodes_.push_back(n);
}

void Graph::copy(TensorId src, TensorId dst) {
  GraphNode n{PI_OP_CPY, {src, -1, -1, -1}, dst};
  n.kind = NodeKind::kCopy;
  n.device = tensors_[tensors_[dst].base].device;
  nodes_.push_back(n);
}

TensorId Graph::view(TensorId t, const Shape& ne, const Strides& nb, uint64_t offset_bytes) {
  return view_as(t, tensors_[t].type, ne, nb, offset_bytes);
}

TensorId Graph::view_as(TensorId t, GgmlType type, const Shape& ne, const Strides& nb,
                        uint64_t offset_bytes) {
  const GraphTensor& src = tensors_[t];
  // Offsets accumulate: a view of a bound tensor is absolute in its buffer; a
  // view of an intermediate is relative to where the planner puts the owner
  // (whose own offset is 0 until then).
  return add({type, ne, nb, StorageKind::kView, src.base, src.offset + offset_bytes, src.buffer,
              false, src.device});
}

TensorId Graph::reshape(TensorId t, const Shape& ne) {
  const GraphTensor& src = tensors_[t];
  if (src.nb != contiguous_strides(src.type, src.ne) ||
      ne[0] * ne[1] * ne[2] * ne[3] != src.ne[0] * src.ne[1] * src.ne[2] * src.ne[3]) {
    throw Error(ErrorCode::kInvalidArgument,
                "reshape of a non-contiguous tensor or to another size");
  }
  return view(t, ne, contiguous_strides(src.type, ne), 0);
}

uint64_t Graph::nbytes(TensorId t) const {
  const GraphTensor& g = tensors_[t];
  return g.nb[3] * static_cast<uint64_t>(g.ne[3]);
}

}  // namespace polyinfer
