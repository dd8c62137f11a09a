// An op graph for one batch: tensors (weights and KV cache bound to device
// buffers, host inputs, intermediates) and nodes in execution order. Views
// (reshape, permute, slices) are descriptors over another tensor's storage, as
// in ggml, so they cost nothing. Shapes are ggml order: ne[0] innermost.
//
// Devices are small integers, indices into the list of devices a run uses. A
// bound tensor lives on the device that owns its buffer; a node carries the
// device its builder wants it on (set_device). The scheduler (scheduler.hpp)
// decides where nodes really run and where inputs and intermediates live, and
// inserts the copies between devices.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "polyinfer/backend/abi.h"
#include "polyinfer/dtype.hpp"

namespace polyinfer {

using TensorId = int32_t;
using Shape = std::array<int64_t, 4>;
using Strides = std::array<uint64_t, 4>;

enum class StorageKind {
  kBound,         // lives in a buffer the caller owns (weights, KV cache)
  kInput,         // host data written before the graph runs
  kIntermediate,  // written by a node, placed by the planner
  kView,          // a window on another tensor's storage
};

struct GraphTensor {
  GgmlType type;
  Shape ne;
  Strides nb;
  StorageKind kind;
  TensorId base;               // owner of the storage (itself unless a view)
  uint64_t offset = 0;         // bytes from the owner's start (views), or in buffer (bound)
  pi_buffer buffer = nullptr;  // bound tensors only
  bool output = false;         // read back after the graph ran
  int32_t device = 0;          // where the storage lives (owners; views follow their base)
};

enum class NodeKind {
  kOp,    // an op of the ABI, submitted to a device
  kCopy,  // the host copies src's bytes to dst (both contiguous, same size), across devices
};

struct GraphNode {
  pi_op op;
  std::array<TensorId, PI_MAX_SRC> src{-1, -1, -1, -1};
  TensorId dst;
  std::array<int32_t, 8> i{};
  std::array<float, 8> f{};
  int32_t device = 0;  // where the node runs (a wish until scheduled)
  NodeKind kind = NodeKind::kOp;
};

// Contiguous byte strides of a shape for a type (ne[0] a multiple of the block size).
Strides contiguous_strides(GgmlType type, const Shape& ne);

// Bytes from a tensor's first to one past its last element, under its strides.
uint64_t span_bytes(const GraphTensor& t);

class Graph {
 public:
  // Tensors in a buffer of `device`.
  TensorId bound(GgmlType type, const Shape& ne, pi_buffer buffer, uint64_t offset,
                 int32_t device = 0);
  TensorId bound(GgmlType type, const Shape& ne, const Strides& nb, pi_buffer buffer,
                 uint64_t offset, int32_t device = 0);
  TensorId input(GgmlType type, const Shape& ne);
  // A contiguous intermediate with no writer yet, on `device` (the scheduler's replicas).
  TensorId scratch(GgmlType type, const Shape& ne, int32_t device);
  // Nodes added from now on wish to run on `device`.
  void set_device(int32_t device) { device_ = device; }
  // A new node writing a fresh contiguous tensor of type/shape dst.
  TensorId op(pi_op op, std::span<const TensorId> srcs, GgmlType type, const Shape& ne,
              std::span<const int32_t> iparams = {}, std::span<const float> fparams = {});
  // A node writing into an existing tensor (e.g. CPY into a KV cache view).
  void op_into(pi_op op, std::span<const TensorId> srcs, TensorId dst);
  TensorId view(TensorId t, const Shape& ne, const Strides& nb, uint64_t offset_bytes);
  // A view that reads the bytes as another type (I8 byte ranges for copies).
  TensorId view_as(TensorId t, GgmlType type, const Shape& ne, const Strides& nb,
                   uint64_t offset_bytes);
  // The host copy of src's bytes into dst (see NodeKind::kCopy).
  void copy(TensorId src, TensorId dst);
  TensorId reshape(TensorId t, const Shape& ne);  // t must be contiguous
  void mark_output(TensorId t) { tensors_[t].output = true; }

  const GraphTensor& tensor(TensorId t) const { return tensors_[t]; }
  const std::vector<GraphTensor>& tensors() const { return tensors_; }
  const std::vector<GraphNode>& nodes() const { return nodes_; }
  std::vector<GraphTensor>& mutable_tensors() { return tensors_; }
  std::vector<GraphNode>& mutable_nodes() { return nodes_; }
  uint64_t nbytes(TensorId t) const;  // bytes spanned by a contiguous tensor

 private:
  TensorId add(GraphTensor t);
  std::vector<GraphTensor> tensors_;
  std::vector<GraphNode> nodes_;
  int32_t device_ = 0;
};

}  // namespace polyinfer
