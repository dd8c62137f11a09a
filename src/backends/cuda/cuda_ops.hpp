// The CUDA backend's op table: for each pi_op, whether a node is supported
// (types, shapes, params only: buffers may be placeholders), how much scratch
// it needs, and the launch that enqueues it on a stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/tensor_rules.hpp"
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
  // The node's per-token value in device memory (decode_fields.hpp), or
  // nullptr: then its kernels take it from the views.
  const int64_t* field = nullptr;
  // No node of any submit writes src[0]'s buffer (pi_buffer_s::kernel_written).
  bool src0_constant = false;
};

struct OpImpl {
  bool (*supports)(const pi_node& n);
  size_t (*scratch)(const pi_node& n);  // bytes of scratch the launch needs
  // Enqueues the node; returns a message on failure, nullptr on success.
  const char* (*launch)(const LaunchContext& c);
};

extern const OpImpl kOpGetRows, kOpRmsNorm, kOpNorm, kOpMulMat, kOpAdd, kOpMul, kOpScale, kOpRope,
    kOpSoftMax, kOpFlashAttn, kOpSilu, kOpGelu, kOpSwiglu, kOpCpy, kOpArgmax;

}  // namespace polyinfer::cuda
