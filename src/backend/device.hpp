// Host side of the plugin ABI: an opened device of some backend, its default
// stream, and buffers on it, as RAII objects that turn pi_status failures into
// polyinfer::Error(kBackend) with the backend's own message.
#pragma once
#include <cstdint>
#include <string>

#include "polyinfer/backend/abi.h"

namespace polyinfer {

class BackendDevice {
 public:
  // Opens device `index` of the backend; options as pi_backend_vtable::device_open.
  BackendDevice(const pi_backend_vtable& vt, int index, const std::string& options);
  ~BackendDevice();
  BackendDevice(const BackendDevice&) = delete;
  BackendDevice& operator=(const BackendDevice&) = delete;

  const pi_backend_vtable& vt() const { return vt_; }
  pi_device handle() const { return dev_; }
  pi_stream stream() const { return stream_; }
  const pi_device_info& info() const { return info_; }
  std::string name() const;  // "cpu:0"

  // Throws Error(kBackend) "<backend>: <what>: <backend message>" unless s == PI_OK.
  void check(pi_status s, const char* what) const;
  bool supports(const pi_node& node) const { return vt_.supports(dev_, &node) != 0; }
  void submit(const pi_graph& graph) const;
  // graph_prepare (abi.h): false where the backend has none or declines the
  // graph (the caller then submits it with submit()).
  bool prepare(const pi_graph& graph) const;
  void submit_prepared() const;
  void sync() const;

 private:
  const pi_backend_vtable& vt_;
  int index_;
  pi_device dev_ = nullptr;
  pi_stream stream_ = nullptr;
  pi_device_info info_{};
};

// A buffer on a device: allocated, or wrapping caller-owned host memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static DeviceBuffer allocate(const BackendDevice& dev, uint64_t size);
  // Zero-copy where the backend can (CPU); empty buffer (handle() == nullptr) otherwise.
  static DeviceBuffer wrap_host(const BackendDevice& dev, void* ptr, uint64_t size);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;

  pi_buffer handle() const { return buf_; }
  uint64_t size() const { return size_; }
  void write(uint64_t offset, const void* src, uint64_t size) const;
  void read(uint64_t offset, void* dst, uint64_t size) const;

 private:
  const BackendDevice* dev_ = nullptr;
  pi_buffer buf_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace polyinfer
