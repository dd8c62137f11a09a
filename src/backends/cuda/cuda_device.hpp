// The objects behind the opaque handles of the ABI: an opened device, a
// buffer (device memory plus its size), a stream with its own cuBLAS handle,
// scratch pool, graph cache and profiler.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/graph_cache.hpp"
#include "backends/cuda/profiler.hpp"
#include "backends/cuda/scratch_pool.hpp"
#include "polyinfer/backend/abi.h"

struct pi_device_s {
  int index = 0;
  int sm_count = 0;
  bool graphs = true;  // capture and replay repeated submits (option graphs=0 turns it off)
  bool fusion = true;  // launch fused units (fusion.hpp; option fusion=0 turns it off)
  // Programmatic dependent launch (pdl.cuh): sm_90+, option pdl=0 turns it off.
  bool pdl = false;
  polyinfer::cuda::ProfileMode profile = polyinfer::cuda::ProfileMode::kOff;
  std::string error;
};

struct pi_buffer_s {
  pi_device dev;
  uint8_t* ptr;
  uint64_t size;
  // A node of some submit has written it (graph_submit.cpp). Kernels start
  // before the ones before them complete (pdl.cuh), so only a buffer that no
  // kernel writes (model weights, uploaded with buffer_write) may be read
  // before a kernel's wait.
  bool kernel_written = false;
  // Wraps page-locked host memory (buffer_wrap_host; ptr is its device
  // mapping, host_ptr the caller's address): freed by unregistering it.
  bool host = false;
  void* host_ptr = nullptr;
};

namespace polyinfer::cuda {
// graph_prepare's plan (graph_submit.cpp).
struct PreparedSubmit;
void free_prepared(PreparedSubmit* p);
struct PreparedDeleter {
  void operator()(PreparedSubmit* p) const { free_prepared(p); }
};
}  // namespace polyinfer::cuda

struct pi_stream_s {
  pi_device dev;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  void* cublas_workspace = nullptr;
  polyinfer::cuda::ScratchPool scratch;
  polyinfer::cuda::GraphCache graphs;
  // The per-token fields of the graph being run (decode_fields.hpp), uploaded
  // before each submit; fixed for the stream's life, since its captured
  // graphs hold the address.
  int64_t* decode_fields = nullptr;
  // kMaxNormQRows / 32 counters, zero between kernels (matvec.hpp's
  // MatvecNormQ); fixed for the stream's life, as decode_fields.
  unsigned* norm_counts = nullptr;
  // No kernel enqueued on the stream can still be running: set where the host
  // synchronizes it, cleared by every submit. A decode step's attention may
  // then read the KV rows that no node of its own graph writes before its
  // wait (decode_fields.hpp).
  bool idle = true;
  polyinfer::cuda::Profiler profiler;
  // Recorded after a write from page-locked host memory, which waits for it.
  cudaEvent_t written = nullptr;
  std::vector<uint8_t> small_write;  // a short write's pageable copy of its source
  // The graph of the last graph_prepare, until graph_submit_prepared or a
  // graph_submit.
  std::unique_ptr<polyinfer::cuda::PreparedSubmit, polyinfer::cuda::PreparedDeleter> prepared;
};
