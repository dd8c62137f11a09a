#include "backend/device.hpp"

#include <utility>

#include "polyinfer/error.hpp"

namespace polyinfer {

BackendDevice::BackendDevice(const pi_backend_vtable& vt, int index, const std::string& options)
    : vt_(vt), index_(index) {
  if (vt_.device_open(index, options.c_str(), &dev_) != PI_OK) {
    throw Error(ErrorCode::kBackend, std::string(vt_.name) + ": cannot open device " +
                                         std::to_string(index) + ": " + vt_.last_error(nullptr));
  }
  check(vt_.device_info(index, &info_), "device info");
  check(vt_.stream_create(dev_, &stream_), "create stream");
}

BackendDevice::~BackendDevice() {
  if (stream_) vt_.stream_destroy(stream_);
  vt_.device_close(dev_);
}

std::string BackendDevice::name() const {
  return std::string(vt_.name) + ":" + std::to_string(index_);
}

void BackendDevice::check(pi_status s, const char* what) const {
  if (s == PI_OK) return;
  throw Error(ErrorCode::kBackend, name() + ": " + what + ": " + vt_.last_error(dev_));
}

void BackendDevice::submit(const pi_graph& graph) const {
  check(vt_.graph_submit(stream_, &graph), "graph submit");
}

bool BackendDevice::prepare(const pi_graph& graph) const {
  return vt_.graph_prepare != nullptr && vt_.graph_submit_prepared != nullptr &&
         vt_.graph_prepare(stream_, &graph) == PI_OK;
}

void BackendDevice::submit_prepared() const {
  check(vt_.graph_submit_prepared(stream_), "graph submit");
}

void BackendDevice::sync() const {
  check(vt_.stream_sync(stream_), "stream sync");
}

DeviceBuffer DeviceBuffer::allocate(const BackendDevice& dev, uint64_t size) {
  DeviceBuffer b;
  dev.check(dev.vt().buffer_alloc(dev.handle(), size, &b.buf_), "buffer alloc");
  b.dev_ = &dev;
  b.size_ = size;
  return b;
}

DeviceBuffer DeviceBuffer::wrap_host(const BackendDevice& dev, void* ptr, uint64_t size) {
  DeviceBuffer b;
  if (dev.vt().buffer_wrap_host(dev.handle(), ptr, size, &b.buf_) != PI_OK) return b;
  b.dev_ = &dev;
  b.size_ = size;
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (buf_) dev_->vt().buffer_free(buf_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : dev_(o.dev_), buf_(std::exchange(o.buf_, nullptr)), size_(o.size_) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (buf_) dev_->vt().buffer_free(buf_);
    dev_ = o.dev_;
    buf_ = std::exchange(o.buf_, nullptr);
    size_ = o.size_;
  }
  return *this;
}

void DeviceBuffer::write(uint64_t offset, const void* src, uint64_t size) const {
  dev_->check(dev_->vt().buffer_write(dev_->stream(), buf_, offset, src, size), "buffer write");
}

void DeviceBuffer::read(uint64_t offset, void* dst, uint64_t size) const {
  dev_->check(dev_->vt().buffer_read(dev_->stream(), buf_, offset, dst, size), "buffer read");
}

}  // namespace polyinfer
