// The CUDA plugin's vtable: devices, buffers (cudaMalloc) and streams (one
// CUDA stream, cuBLAS handle, scratch pool and graph cache each);
// graph_submit.cpp enqueues graphs.
//
// buffer_write copies from pageable host memory with cudaMemcpyAsync, which
// returns once the source has been staged, so the caller may reuse it at once;
// from page-locked memory (host memory wrapped by buffer_wrap_host: the
// executor's CPU arena, graph/host_arena.hpp) the copy runs by DMA and the
// write waits for it, for the same guarantee;
// buffer_read returns when the destination is filled (after all earlier work
// on the stream).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_probe.hpp"
#include "backends/cuda/cuda_status.hpp"
#include "backends/cuda/graph_submit.hpp"
#include "backends/cuda/host_pins.hpp"
#include "backends/cuda/matvec_path.hpp"

namespace polyinfer::cuda {
namespace {

// cuBLAS's workspace per stream, set explicitly so that a captured GEMM
// allocates nothing.
constexpr size_t kCublasWorkspace = size_t{32} << 20;
// Writes from page-locked host memory of at least this many bytes run by DMA
// straight from it (8 MB of llama-8b prompt embeddings: 1.4-1.5 ms through
// the driver's staging of pageable memory, 0.2-0.4 ms by DMA, H200 host).
constexpr uint64_t kPinnedDmaMin = uint64_t{1} << 20;

std::string g_open_error;

bool option_off(const char* options, const char* key) {
  if (options == nullptr) return false;
  const char* at = std::strstr(options, key);
  return at != nullptr && at[std::strlen(key)] == '0';
}

// A feature is on unless the device option `key` (e.g. "graphs=") is 0 or the
// environment variable `env` starts with '0'.
bool feature_on(const char* options, const char* key, const char* env) {
  const char* e = std::getenv(env);
  return !option_off(options, key) && !(e != nullptr && e[0] == '0');
}

pi_status device_open(int index, const char* options, pi_device* out) {
  if (out == nullptr || index < 0 || index >= device_count()) {
    g_open_error = "CUDA backend: no device " + std::to_string(index);
    return PI_ERR_INVALID;
  }
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, index); e != cudaSuccess) {
    g_open_error = std::string("CUDA backend: cudaGetDeviceProperties: ") + cudaGetErrorString(e);
    return PI_ERR_DEVICE;
  }
  auto* dev = new pi_device_s;
  dev->index = index;
  dev->sm_count = p.multiProcessorCount;
  dev->profile = profile_mode_from_env();
  dev->graphs = feature_on(options, "graphs=", "POLYINFER_CUDA_GRAPHS") &&
                dev->profile != ProfileMode::kKernels;
  dev->fusion = feature_on(options, "fusion=", "POLYINFER_CUDA_FUSION");
  dev->pdl = p.major >= 9 && feature_on(options, "pdl=", "POLYINFER_CUDA_PDL");
  *out = dev;
  return PI_OK;
}

void device_close(pi_device dev) {
  delete dev;
}

const char* last_error(pi_device dev) {
  return dev ? dev->error.c_str() : g_open_error.c_str();
}

pi_status buffer_alloc(pi_device dev, uint64_t size, pi_buffer* out) {
  cudaSetDevice(dev->index);
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, size == 0 ? 1 : size); e != cudaSuccess) {
    cudaGetLastError();
    return fail(
        dev, PI_ERR_OUT_OF_MEMORY,
        "CUDA backend: cudaMalloc of " + std::to_string(size) + " bytes: " + cudaGetErrorString(e));
  }
  *out = new pi_buffer_s{dev, static_cast<uint8_t*>(p), size};
  return PI_OK;
}

// Page-locks caller-owned host memory (for every device: portable) and maps
// it, so that writes from it run by DMA; kernels could read it over the bus.
pi_status buffer_wrap_host(pi_device dev, void* ptr, uint64_t size, pi_buffer* out) {
  cudaSetDevice(dev->index);
  if (cudaError_t e =
          cudaHostRegister(ptr, size, cudaHostRegisterPortable | cudaHostRegisterMapped);
      e != cudaSuccess) {
    cudaGetLastError();
    return fail(dev, PI_ERR_UNSUPPORTED,
                std::string("CUDA backend: cudaHostRegister: ") + cudaGetErrorString(e));
  }
  void* mapped = nullptr;
  if (cudaError_t e = cudaHostGetDevicePointer(&mapped, ptr, 0); e != cudaSuccess) {
    cudaHostUnregister(ptr);
    return cuda_fail(dev, "cudaHostGetDevicePointer", e);
  }
  add_host_pin(ptr, size);
  *out = new pi_buffer_s{dev, static_cast<uint8_t*>(mapped), size};
  (*out)->host = true;
  (*out)->host_ptr = ptr;
  return PI_OK;
}

void buffer_free(pi_buffer buf) {
  if (buf == nullptr) return;
  const cudaError_t e = buf->host ? cudaHostUnregister(buf->host_ptr) : cudaFree(buf->ptr);
  if (buf->host) remove_host_pin(buf->host_ptr);
  // Nothing to report it to: clear it, or the next launch check would blame a kernel.
  if (e != cudaSuccess) cudaGetLastError();
  delete buf;
}

void* buffer_map(pi_buffer) {
  return nullptr;
}

pi_status check_range(pi_buffer buf, uint64_t offset, uint64_t size) {
  if (offset > buf->size || size > buf->size - offset) {
    return fail(buf->dev, PI_ERR_INVALID,
                "CUDA backend: " + std::to_string(size) + " bytes at offset " +
                    std::to_string(offset) + " exceed a buffer of " + std::to_string(buf->size));
  }
  return PI_OK;
}

pi_status buffer_write(pi_stream s, pi_buffer buf, uint64_t offset, const void* src,
                       uint64_t size) {
  if (pi_status st = check_range(buf, offset, size); st != PI_OK) return st;
  const bool pinned = host_pinned(src, size);
  if (pinned && size < kPinnedDmaMin) {
    // A decode step's embedding row: through pageable memory as before, so
    // that the write does not wait for the DMA (the ABI lets the caller reuse
    // src at once, which a DMA from src would still be reading).
    s->small_write.assign(static_cast<const uint8_t*>(src),
                          static_cast<const uint8_t*>(src) + size);
    src = s->small_write.data();
  }
  if (cudaError_t e =
          cudaMemcpyAsync(buf->ptr + offset, src, size, cudaMemcpyHostToDevice, s->stream);
      e != cudaSuccess) {
    return cuda_fail(s->dev, "cudaMemcpyAsync to device", e);
  }
  if (!pinned || size < kPinnedDmaMin) return PI_OK;
  // The DMA reads src after this returns: wait for it, and so for the
  // stream's earlier work, as a pageable write waits for it too (CUDA's
  // cudaMemcpyAsync synchronizes the stream before a pageable copy).
  if (cudaError_t e = cudaEventRecord(s->written, s->stream); e != cudaSuccess)
    return cuda_fail(s->dev, "cudaEventRecord", e);
  if (cudaError_t e = cudaEventSynchronize(s->written); e != cudaSuccess)
    return cuda_fail(s->dev, "cudaEventSynchronize", e);
  return PI_OK;
}

pi_status buffer_read_untimed(pi_stream s, pi_buffer buf, uint64_t offset, void* dst,
                              uint64_t size) {
  if (pi_status st = check_range(buf, offset, size); st != PI_OK) return st;
  if (cudaError_t e =
          cudaMemcpyAsync(dst, buf->ptr + offset, size, cudaMemcpyDeviceToHost, s->stream);
      e != cudaSuccess) {
    return cuda_fail(s->dev, "cudaMemcpyAsync to host", e);
  }
  if (cudaError_t e = cudaStreamSynchronize(s->stream); e != cudaSuccess) {
    return cuda_fail(s->dev, "cudaStreamSynchronize", e);
  }
  s->idle = true;
  s->profiler.collect();
  return PI_OK;
}

// In host profiling, a read's time is mostly the wait for the stream's work.
pi_status buffer_read(pi_stream s, pi_buffer buf, uint64_t offset, void* dst, uint64_t size) {
  if (s->dev->profile != ProfileMode::kHost) return buffer_read_untimed(s, buf, offset, dst, size);
  const auto t0 = std::chrono::steady_clock::now();
  const pi_status st = buffer_read_untimed(s, buf, offset, dst, size);
  const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
  s->profiler.add_submit("buffer_read (waits for the stream)", ms.count());
  return st;
}

void stream_destroy(pi_stream s) {
  if (s == nullptr) return;
  if (s->stream) cudaStreamSynchronize(s->stream);
  s->profiler.collect();
  if (const std::string r = s->profiler.report(); !r.empty()) std::fputs(r.c_str(), stderr);
  if (s->cublas) cublasDestroy(s->cublas);
  if (s->cublas_workspace) cudaFree(s->cublas_workspace);
  if (s->decode_fields) cudaFree(s->decode_fields);
  if (s->norm_counts) cudaFree(s->norm_counts);
  if (s->written) cudaEventDestroy(s->written);
  if (s->stream) cudaStreamDestroy(s->stream);
  delete s;
}

pi_status stream_create(pi_device dev, pi_stream* out) {
  cudaSetDevice(dev->index);
  auto* s = new pi_stream_s;
  s->dev = dev;
  if (cudaError_t e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
      e != cudaSuccess) {
    delete s;
    return cuda_fail(dev, "cudaStreamCreate", e);
  }
  if (cudaError_t e = cudaEventCreateWithFlags(&s->written, cudaEventDisableTiming);
      e != cudaSuccess) {
    stream_destroy(s);
    return cuda_fail(dev, "cudaEventCreate", e);
  }
  if (cudaError_t e = cudaMalloc(&s->cublas_workspace, kCublasWorkspace); e != cudaSuccess) {
    stream_destroy(s);
    return cuda_fail(dev, "cudaMalloc (cuBLAS workspace)", e);
  }
  if (cudaError_t e = cudaMalloc(&s->decode_fields, kDecodeFieldCapacity * sizeof(int64_t));
      e != cudaSuccess) {
    stream_destroy(s);
    return cuda_fail(dev, "cudaMalloc (decode fields)", e);
  }
  constexpr size_t kCountBytes = kMaxNormQRows / 32 * sizeof(unsigned);
  if (cudaError_t e = cudaMalloc(&s->norm_counts, kCountBytes); e != cudaSuccess) {
    stream_destroy(s);
    return cuda_fail(dev, "cudaMalloc (norm counters)", e);
  }
  if (cudaError_t e = cudaMemsetAsync(s->norm_counts, 0, kCountBytes, s->stream);
      e != cudaSuccess) {
    stream_destroy(s);
    return cuda_fail(dev, "cudaMemsetAsync (norm counters)", e);
  }
  if (cublasCreate(&s->cublas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(s->cublas, s->stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(s->cublas, s->cublas_workspace, kCublasWorkspace) !=
          CUBLAS_STATUS_SUCCESS) {
    stream_destroy(s);
    return fail(dev, PI_ERR_DEVICE, "CUDA backend: cuBLAS initialisation failed");
  }
  *out = s;
  return PI_OK;
}

pi_status stream_sync(pi_stream s) {
  if (cudaError_t e = cudaStreamSynchronize(s->stream); e != cudaSuccess) {
    return cuda_fail(s->dev, "cudaStreamSynchronize", e);
  }
  s->idle = true;
  s->profiler.collect();
  return PI_OK;
}

const pi_backend_vtable kVtable{
    PI_ABI_VERSION,        "cuda",       probe,        device_count, device_info,
    device_open,           device_close, last_error,   buffer_alloc, buffer_wrap_host,
    buffer_free,           buffer_map,   buffer_write, buffer_read,  stream_create,
    stream_destroy,        stream_sync,  supports,     graph_submit, graph_prepare,
    graph_submit_prepared,
};

}  // namespace
}  // namespace polyinfer::cuda

extern "C" __attribute__((visibility("default"))) const pi_backend_vtable* polyinfer_backend_entry(
    void) {
  return &polyinfer::cuda::kVtable;
}
