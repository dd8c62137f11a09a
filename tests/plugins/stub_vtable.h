/* Shared by the test plugins: the vtable entries none of them implements, and a macro that
 * fills a vtable with them. Each plugin is its own .so, so these statics do not collide. */
#ifndef POLYINFER_TEST_STUB_VTABLE_H
#define POLYINFER_TEST_STUB_VTABLE_H

#include "polyinfer/backend/abi.h"

#define TEST_PLUGIN_EXPORT __attribute__((visibility("default")))

static pi_status stub_device_open(int index, const char* options, pi_device* out) {
  (void)index, (void)options, (void)out;
  return PI_ERR_UNSUPPORTED;
}
static void stub_device_close(pi_device dev) {
  (void)dev;
}
static const char* stub_last_error(pi_device dev) {
  (void)dev;
  return "test plugin: not implemented";
}
static pi_status stub_buffer_alloc(pi_device dev, uint64_t size, pi_buffer* out) {
  (void)dev, (void)size, (void)out;
  return PI_ERR_UNSUPPORTED;
}
static pi_status stub_buffer_wrap_host(pi_device dev, void* ptr, uint64_t size, pi_buffer* out) {
  (void)dev, (void)ptr, (void)size, (void)out;
  return PI_ERR_UNSUPPORTED;
}
static void stub_buffer_free(pi_buffer buf) {
  (void)buf;
}
static void* stub_buffer_map(pi_buffer buf) {
  (void)buf;
  return NULL;
}
static pi_status stub_buffer_write(pi_stream s, pi_buffer buf, uint64_t offset, const void* src,
                                   uint64_t size) {
  (void)s, (void)buf, (void)offset, (void)src, (void)size;
  return PI_ERR_UNSUPPORTED;
}
static pi_status stub_buffer_read(pi_stream s, pi_buffer buf, uint64_t offset, void* dst,
                                  uint64_t size) {
  (void)s, (void)buf, (void)offset, (void)dst, (void)size;
  return PI_ERR_UNSUPPORTED;
}
static pi_status stub_stream_create(pi_device dev, pi_stream* out) {
  (void)dev, (void)out;
  return PI_ERR_UNSUPPORTED;
}
static void stub_stream_destroy(pi_stream s) {
  (void)s;
}
static pi_status stub_stream_sync(pi_stream s) {
  (void)s;
  return PI_ERR_UNSUPPORTED;
}
static int stub_supports(pi_device dev, const pi_node* node) {
  (void)dev, (void)node;
  return 0;
}
static pi_status stub_graph_submit(pi_stream s, const pi_graph* graph) {
  (void)s, (void)graph;
  return PI_ERR_UNSUPPORTED;
}

/* A vtable with the given ABI version, name and discovery functions; the rest are stubs. */
#define TEST_VTABLE(abi, name, probe, device_count, device_info)                      \
  {                                                                                   \
    abi, name, probe, device_count, device_info, stub_device_open, stub_device_close, \
        stub_last_error, stub_buffer_alloc, stub_buffer_wrap_host, stub_buffer_free,  \
        stub_buffer_map, stub_buffer_write, stub_buffer_read, stub_stream_create,     \
        stub_stream_destroy, stub_stream_sync, stub_supports, stub_graph_submit, NULL, NULL \
  }

#endif
