// "host-device": a test backend that needs no GPU yet behaves like one towards
// the host. Its buffers are its own host memory that the host cannot address
// (host_visible = 0, no buffer_map, no buffer_wrap_host), so weights must be
// uploaded and every crossing goes through buffer_write/buffer_read; and it
// runs only part of the op set, so placement, copies and per-op fallback are
// exercised end to end. The ops it runs are computed by the CPU backend's
// kernels (linked in statically), so a model's logits must equal a CPU-only run.
//
// Environment (read at device_open / device_info):
//   POLYINFER_HOST_DEVICE_UNSUPPORTED  op names it refuses, comma-separated (default "ROPE")
//   POLYINFER_HOST_DEVICE_MEMORY       bytes it reports and allows (default 1 GiB)
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"

namespace {

const pi_backend_vtable& cpu() {
  return *polyinfer_cpu_backend_entry();
}

uint64_t memory_total() {
  const char* v = std::getenv("POLYINFER_HOST_DEVICE_MEMORY");
  return v && *v ? std::strtoull(v, nullptr, 10) : 1ull << 30;
}

std::set<uint32_t> unsupported_ops() {
  const char* v = std::getenv("POLYINFER_HOST_DEVICE_UNSUPPORTED");
  const std::string list = v ? v : "ROPE";
  std::set<uint32_t> out;
  for (uint32_t op = 0; op < PI_OP_COUNT; ++op) {
    const std::string_view name = pi_op_name(op);
    for (size_t at = list.find(name); at != std::string::npos; at = list.find(name, at + 1)) {
      const size_t end = at + name.size();
      if ((at == 0 || list[at - 1] == ',') && (end == list.size() || list[end] == ',')) {
        out.insert(op);
      }
    }
  }
  return out;
}

uint64_t g_used = 0;  // bytes allocated by all devices (there is one)

}  // namespace

struct pi_device_s {
  pi_device cpu_dev = nullptr;
  pi_stream cpu_stream = nullptr;
  std::set<uint32_t> unsupported;
  std::string error;
};

struct pi_buffer_s {
  std::unique_ptr<uint8_t[]> bytes;
  uint64_t size;
};

struct pi_stream_s {
  pi_device dev;
};

namespace {

pi_status fail(pi_device d, pi_status s, std::string msg) {
  if (d) d->error = std::move(msg);
  return s;
}

int probe(char*, size_t) {
  return 1;
}

int device_count() {
  return 1;
}

pi_status device_info(int index, pi_device_info* out) {
  if (index != 0) return PI_ERR_INVALID;
  *out = pi_device_info{};
  std::strncpy(out->name, "Host test device", sizeof out->name - 1);
  std::strncpy(out->vendor, "polyinfer tests", sizeof out->vendor - 1);
  std::strncpy(out->compute_version, "host", sizeof out->compute_version - 1);
  std::strncpy(out->bus_id, "0000:fe:00.0", sizeof out->bus_id - 1);
  out->kind = PI_DEVICE_GPU;
  out->memory_total = memory_total();
  out->memory_free = out->memory_total > g_used ? out->memory_total - g_used : 0;
  out->host_visible = 0;
  return PI_OK;
}

pi_status device_open(int index, const char* options, pi_device* out) {
  if (index != 0) return PI_ERR_INVALID;
  auto d = std::make_unique<pi_device_s>();
  if (cpu().device_open(0, options, &d->cpu_dev) != PI_OK) return PI_ERR_DEVICE;
  if (cpu().stream_create(d->cpu_dev, &d->cpu_stream) != PI_OK) {
    cpu().device_close(d->cpu_dev);
    return PI_ERR_DEVICE;
  }
  d->unsupported = unsupported_ops();
  *out = d.release();
  return PI_OK;
}

void device_close(pi_device d) {
  cpu().stream_destroy(d->cpu_stream);
  cpu().device_close(d->cpu_dev);
  delete d;
}

const char* last_error(pi_device d) {
  return d ? d->error.c_str() : "host-device: open failed";
}

pi_status buffer_alloc(pi_device d, uint64_t size, pi_buffer* out) {
  if (g_used + size > memory_total()) {
    return fail(d, PI_ERR_OUT_OF_MEMORY,
                "out of memory: " + std::to_string(size) + " bytes asked, " +
                    std::to_string(memory_total() - g_used) + " free");
  }
  auto b = std::make_unique<pi_buffer_s>();
  b->bytes.reset(new (std::align_val_t{64}) uint8_t[size ? size : 1]);
  // Poison: nothing may read memory the host did not write.
  std::memset(b->bytes.get(), 0xA5, size);
  b->size = size;
  g_used += size;
  *out = b.release();
  return PI_OK;
}

pi_status buffer_wrap_host(pi_device d, void*, uint64_t, pi_buffer*) {
  return fail(d, PI_ERR_UNSUPPORTED, "host-device cannot address host memory");
}

void buffer_free(pi_buffer b) {
  g_used -= b->size;
  delete b;
}

void* buffer_map(pi_buffer) {
  return nullptr;
}

pi_status buffer_write(pi_stream s, pi_buffer b, uint64_t off, const void* src, uint64_t n) {
  if (off > b->size || n > b->size - off) return fail(s->dev, PI_ERR_INVALID, "write out of range");
  std::memcpy(b->bytes.get() + off, src, n);
  return PI_OK;
}

pi_status buffer_read(pi_stream s, pi_buffer b, uint64_t off, void* dst, uint64_t n) {
  if (off > b->size || n > b->size - off) return fail(s->dev, PI_ERR_INVALID, "read out of range");
  std::memcpy(dst, b->bytes.get() + off, n);
  return PI_OK;
}

pi_status stream_create(pi_device d, pi_stream* out) {
  *out = new pi_stream_s{d};
  return PI_OK;
}

void stream_destroy(pi_stream s) {
  delete s;
}

pi_status stream_sync(pi_stream) {
  return PI_OK;  // graph_submit runs to completion
}

int supports(pi_device d, const pi_node* n) {
  return d->unsupported.count(n->op) == 0 && cpu().supports(d->cpu_dev, n);
}

// The CPU backend's buffer handle is the host pointer itself.
void to_cpu(pi_tensor& t) {
  if (t.buffer != nullptr) t.buffer = reinterpret_cast<pi_buffer>(t.buffer->bytes.get());
}

pi_status graph_submit(pi_stream s, const pi_graph* g) {
  pi_device d = s->dev;
  std::vector<pi_node> nodes(g->nodes, g->nodes + g->n_nodes);
  for (pi_node& n : nodes) {
    if (!supports(d, &n)) {
      return fail(d, PI_ERR_UNSUPPORTED,
                  std::string("host-device does not run ") + pi_op_name(n.op));
    }
    for (uint32_t k = 0; k < n.n_src; ++k) to_cpu(n.src[k]);
    to_cpu(n.dst);
  }
  const pi_graph cg{nodes.data(), g->n_nodes};
  if (cpu().graph_submit(d->cpu_stream, &cg) != PI_OK || cpu().stream_sync(d->cpu_stream) != PI_OK)
    return fail(d, PI_ERR_DEVICE, cpu().last_error(d->cpu_dev));
  return PI_OK;
}

const pi_backend_vtable kVtable = {
    PI_ABI_VERSION, "host-device", probe,         device_count,     device_info, device_open,
    device_close,   last_error,    buffer_alloc,  buffer_wrap_host, buffer_free, buffer_map,
    buffer_write,   buffer_read,   stream_create, stream_destroy,   stream_sync, supports,
    graph_submit,   nullptr,       nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) const pi_backend_vtable* polyinfer_backend_entry(
    void) {
  return &kVtable;
}
