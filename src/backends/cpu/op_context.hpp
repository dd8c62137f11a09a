// What a CPU op kernel sees: its node, its thread index among nth threads, a
// barrier over those threads and a shared scratch area. Every thread of the
// pool calls run() for every node; a kernel splits its work by ith/nth.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cpu {

class ThreadBarrier;

struct OpContext {
  const pi_node& node;
  int ith;  // this thread, 0 <= ith < nth
  int nth;  // threads running the node
  ThreadBarrier& barrier;
  std::span<uint8_t> work;  // shared by all threads, size work_size(node, nth)
  void sync() const;        // all nth threads meet here
};

// Host address of element (0,0,0,0) of a tensor in a CPU buffer.
uint8_t* tensor_data(const pi_tensor& t);

inline int64_t nelements(const pi_tensor& t) {
  return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}
inline int64_t nrows(const pi_tensor& t) {
  return t.ne[1] * t.ne[2] * t.ne[3];
}

// Rows [begin, end) of `total` that thread ith of nth owns.
struct Range {
  int64_t begin, end;
};
inline Range split_range(int64_t total, int ith, int nth) {
  const int64_t per = (total + nth - 1) / nth;
  const int64_t b = per * ith < total ? per * ith : total;
  const int64_t e = b + per < total ? b + per : total;
  return {b, e};
}

// One op of the CPU backend.
struct OpImpl {
  bool (*supports)(const pi_node& node);
  size_t (*work_size)(const pi_node& node, int nth);  // bytes of shared scratch
  void (*run)(const OpContext& ctx);
};

// Per-op implementations, defined in ops_<name>.cpp.
extern const OpImpl kOpGetRows, kOpRmsNorm, kOpNorm, kOpMulMat, kOpAdd, kOpMul, kOpScale, kOpRope,
    kOpSoftMax, kOpFlashAttn, kOpSilu, kOpGelu, kOpSwiglu, kOpCpy, kOpArgmax;

}  // namespace polyinfer::cpu
