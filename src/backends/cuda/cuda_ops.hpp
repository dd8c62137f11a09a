// The CUDA backend's op table: for each pi_op, whether a node is supported
// (types, shapes, params only: buffers may be placeholders), how much scratch
// it needs, and the launch that enqueues it on a stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

struct View;
struct ActQuantCache;

// What a launch gets: the node, its tensors resolved to device addresses,
// the stream, scratch from the stream's pool and the stream's cuBLAS handle.
struct LaunchContext {
  const pi_node& node;
  const View* src;  // PI_MAX_SRC views; data == nullptr for an absent source
  const View& dst;
  cudaStream_t stream;
  uint8_t* scratch;
  size_t scratch_size;
  cublasHandle_t cublas;
  int sm_count;
  ActQuantCache* act_cache;  // MUL_MAT's quantized activations in scratch
};

struct OpImpl {
  bool (*supports)(const pi_node& n);
  size_t (*scratch)(const pi_node& n);  // bytes of scratch the launch needs
  // Enqueues the node; returns a message on failure, nullptr on success.
  const char* (*launch)(const LaunchContext& c);
};

extern const OpImpl kOpGetRows, kOpRmsNorm, kOpNorm, kOpMulMat, kOpAdd, kOpMul, kOpScale, kOpRope,
    kOpSoftMax, kOpFlashAttn, kOpSilu, kOpGelu, kOpSwiglu, kOpCpy, kOpArgmax;

// Shared shape predicates (cuda_ops.cpp).
bool is_f32_rows(const pi_tensor& t);
bool same_shape(const pi_tensor& a, const pi_tensor& b);
bool present(const pi_tensor& t);
int64_t nrows(const pi_tensor& t);
size_t no_scratch(const pi_node& n);
// Block length and bytes per block of a weight type; {0, 0} for a type the
// backend cannot decode.
struct TypeSize {
  int block;
  int bytes;
};
TypeSize type_size(uint32_t type);
// Bytes that every row start of a tensor of this type is aligned to: the
// kernels read block fields with 2-byte (F16 scale) or 4-byte loads.
int type_alignment(uint32_t type);
bool rows_aligned(const pi_tensor& t);

// Grid size for n items of `per_block` threads each, capped to what a 1-D
// grid allows (the kernels loop over the rest).
unsigned grid_for(int64_t n, int per_block);

}  // namespace polyinfer::cuda
