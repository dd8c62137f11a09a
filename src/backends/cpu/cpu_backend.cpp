// Buffers are host memory: a CPU pi_buffer handle is the base address itself,
// so tensor_data() is one addition. Graphs run synchronously on submit.
#include "backends/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "backends/cpu/cpu_device_info.hpp"
#include "backends/cpu/graph_work.hpp"
#include "backends/cpu/matmul/matmul_kernels.hpp"
#include "backends/cpu/op_context.hpp"
#include "backends/cpu/thread_pool.hpp"

struct pi_device_s {
  pi_device_s(int n_threads, uint64_t solo) : pool(n_threads), solo_below(solo) {}
  polyinfer::cpu::ThreadPool pool;
  // Graphs of less work (graph_work.hpp) run on the submitting thread alone.
  uint64_t solo_below;
  polyinfer::cpu::ThreadBarrier solo_barrier{1};
  std::unique_ptr<uint8_t, decltype(&std::free)> work{nullptr, &std::free};
  size_t work_size = 0;
  std::string error;
};

namespace polyinfer::cpu {

uint8_t* tensor_data(const pi_tensor& t) {
  return reinterpret_cast<uint8_t*>(t.buffer) + t.offset;
}

void OpContext::sync() const {
  barrier.wait();
}

namespace {

constexpr size_t kAlign = 64;  // cache line and AVX-512 vector

const OpImpl* const kOps[PI_OP_COUNT] = {
    &kOpGetRows, &kOpRmsNorm,   &kOpNorm, &kOpMulMat, &kOpAdd,    &kOpMul, &kOpScale,  &kOpRope,
    &kOpSoftMax, &kOpFlashAttn, &kOpSilu, &kOpGelu,   &kOpSwiglu, &kOpCpy, &kOpArgmax,
};

// Allocated buffers, so buffer_free can tell them from wrapped host memory.
std::mutex g_owned_mutex;
std::unordered_set<void*> g_owned;

std::string g_open_error;

void copy_str(char* dst, size_t cap, const std::string& s) {
  std::snprintf(dst, cap, "%s", s.c_str());
}

int probe(char*, size_t) {
  return 1;
}
int device_count() {
  return 1;
}

pi_status device_info(int index, pi_device_info* out) {
  if (index != 0 || out == nullptr) return PI_ERR_INVALID;
  std::memset(out, 0, sizeof *out);
  const HostInfo h = read_host_info();
  copy_str(out->name, sizeof out->name, h.cpu_name);
  copy_str(out->vendor, sizeof out->vendor, h.vendor);
  copy_str(out->compute_version, sizeof out->compute_version, simd_target_name());
  out->kind = PI_DEVICE_CPU;
  out->memory_total = h.memory_total;
  out->memory_free = h.memory_available;
  out->host_visible = 1;
  return PI_OK;
}

// "solo=N" (value operations; kSoloWork when absent), -1 when malformed.
int64_t solo_option(const char* options) {
  const char* at = options ? std::strstr(options, "solo=") : nullptr;
  if (at == nullptr) return static_cast<int64_t>(kSoloWork);
  char* end = nullptr;
  const long long n = std::strtoll(at + 5, &end, 10);
  return end != at + 5 && n >= 0 ? n : -1;
}

// "threads=N" (other keys are ignored so the host can pass shared options).
int threads_option(const char* options) {
  if (options == nullptr) return physical_core_count();
  const char* at = std::strstr(options, "threads=");
  if (at == nullptr) return physical_core_count();
  const long n = std::strtol(at + 8, nullptr, 10);
  return n >= 1 && n <= 1024 ? static_cast<int>(n) : -1;
}

pi_status device_open(int index, const char* options, pi_device* out) {
  if (index != 0 || out == nullptr) {
    g_open_error = "the CPU backend has one device, index 0";
    return PI_ERR_INVALID;
  }
  const int n = threads_option(options);
  if (n < 1) {
    g_open_error = "threads must be between 1 and 1024";
    return PI_ERR_INVALID;
  }
  const int64_t solo = solo_option(options);
  if (solo < 0) {
    g_open_error = "solo must be a count of value operations (0 or more)";
    return PI_ERR_INVALID;
  }
  *out = new pi_device_s(n, static_cast<uint64_t>(solo));
  return PI_OK;
}

void device_close(pi_device dev) {
  delete dev;
}

const char* last_error(pi_device dev) {
  return dev ? dev->error.c_str() : g_open_error.c_str();
}

pi_status buffer_alloc(pi_device dev, uint64_t size, pi_buffer* out) {
  void* p =
      std::aligned_alloc(kAlign, (std::max<uint64_t>(size, 1) + kAlign - 1) / kAlign * kAlign);
  if (p == nullptr) {
    dev->error = "out of host memory allocating " + std::to_string(size) + " bytes";
    return PI_ERR_OUT_OF_MEMORY;
  }
  std::lock_guard lock(g_owned_mutex);
  g_owned.insert(p);
  *out = static_cast<pi_buffer>(p);
  return PI_OK;
}

pi_status buffer_wrap_host(pi_device, void* ptr, uint64_t, pi_buffer* out) {
  *out = static_cast<pi_buffer>(ptr);
  return PI_OK;
}

void buffer_free(pi_buffer buf) {
  std::lock_guard lock(g_owned_mutex);
  if (g_owned.erase(buf) != 0) std::free(buf);
}

void* buffer_map(pi_buffer buf) {
  return buf;
}

pi_status buffer_write(pi_stream, pi_buffer buf, uint64_t offset, const void* src, uint64_t size) {
  std::memcpy(reinterpret_cast<uint8_t*>(buf) + offset, src, size);
  return PI_OK;
}

pi_status buffer_read(pi_stream, pi_buffer buf, uint64_t offset, void* dst, uint64_t size) {
  std::memcpy(dst, reinterpret_cast<const uint8_t*>(buf) + offset, size);
  return PI_OK;
}

// A CPU stream is its device: work runs synchronously, in order.
pi_status stream_create(pi_device dev, pi_stream* out) {
  *out = reinterpret_cast<pi_stream>(dev);
  return PI_OK;
}
void stream_destroy(pi_stream) {}
pi_status stream_sync(pi_stream) {
  return PI_OK;
}

int supports(pi_device, const pi_node* node) {
  return node->op < PI_OP_COUNT && kOps[node->op]->supports(*node) ? 1 : 0;
}

bool ensure_work(pi_device dev, size_t size) {
  if (size <= dev->work_size) return true;
  const size_t rounded = (size + kAlign - 1) / kAlign * kAlign;
  dev->work.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlign, rounded)));
  dev->work_size = dev->work ? rounded : 0;
  return dev->work != nullptr;
}

pi_status graph_submit(pi_stream s, const pi_graph* graph) {
  pi_device dev = reinterpret_cast<pi_device>(s);
  const bool solo = graph_work(*graph) < dev->solo_below;
  const int nth = solo ? 1 : dev->pool.size();
  size_t work = 0;
  for (uint32_t i = 0; i < graph->n_nodes; ++i) {
    const pi_node& n = graph->nodes[i];
    if (!supports(dev, &n)) {
      dev->error = std::string("CPU backend: node ") + std::to_string(i) + " (" + pi_op_name(n.op) +
                   ") has types or shapes it does not support";
      return PI_ERR_UNSUPPORTED;
    }
    work = std::max(work, kOps[n.op]->work_size(n, nth));
  }
  if (!ensure_work(dev, work)) {
    dev->error = "out of host memory for " + std::to_string(work) + " bytes of scratch";
    return PI_ERR_OUT_OF_MEMORY;
  }
  std::span<uint8_t> scratch(dev->work.get(), dev->work_size);
  ThreadBarrier& barrier = solo ? dev->solo_barrier : dev->pool.barrier();
  const auto job = [&](int ith) {
    for (uint32_t i = 0; i < graph->n_nodes; ++i) {
      const pi_node& n = graph->nodes[i];
      kOps[n.op]->run(OpContext{n, ith, nth, barrier, scratch});
      barrier.wait();
    }
  };
  if (solo)
    job(0);
  else
    dev->pool.run(job);
  return PI_OK;
}

const pi_backend_vtable kVtable{
    PI_ABI_VERSION, "cpu",       probe,         device_count,     device_info, device_open,
    device_close,   last_error,  buffer_alloc,  buffer_wrap_host, buffer_free, buffer_map,
    buffer_write,   buffer_read, stream_create, stream_destroy,   stream_sync, supports,
    graph_submit,   nullptr,     nullptr,
};

}  // namespace
}  // namespace polyinfer::cpu

extern "C" const pi_backend_vtable* polyinfer_cpu_backend_entry(void) {
  return &polyinfer::cpu::kVtable;
}
