#include "backend_under_test.hpp"

#include <cstdlib>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "polyinfer/error.hpp"
#include "registry/backend_registry.hpp"

namespace polyinfer::conformance {
namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

pi_tensor bind(const HostTensor& t, const DeviceBuffer& buf) {
  pi_tensor p{};
  p.type = static_cast<uint32_t>(t.type);
  for (int d = 0; d < 4; ++d) {
    p.ne[d] = t.ne[d];
    p.nb[d] = t.nb[d];
  }
  p.buffer = buf.handle();
  p.offset = t.offset;
  return p;
}

const pi_backend_vtable* find_backend(std::string_view name, std::string* reason) {
  if (name == "cpu") return polyinfer_cpu_backend_entry();
  // Plugins come through the same search and isolated probe as `polyinfer run`.
  static const BackendRegistry registry(RegistryOptions::from_environment());
  const BackendEntry* b = registry.find(name);
  if (b != nullptr && b->usable()) return b->vtable;
  std::string usable;
  for (const BackendEntry& e : registry.backends())
    if (e.usable()) usable += (usable.empty() ? "" : ", ") + e.name;
  *reason = "backend '" + std::string(name) + "' is not usable here (" +
            (b == nullptr ? std::string("not found") : b->status_line()) + "); usable: " + usable +
            "; set POLYINFER_CONFORMANCE_BACKEND to one of those";
  return nullptr;
}

std::string NodeRun::describe() const {
  return "supports() = " + std::to_string(supported) +
         ", graph_submit() = " + std::to_string(status) + (error.empty() ? "" : ": " + error);
}

BackendUnderTest::BackendUnderTest() {
  const std::string name = env_or("POLYINFER_CONFORMANCE_BACKEND", "cpu");
  std::string reason;
  const pi_backend_vtable* vt = find_backend(name, &reason);
  if (vt == nullptr) throw Error(ErrorCode::kUnsupported, reason);
  options_ = env_or("POLYINFER_CONFORMANCE_OPTIONS", "threads=4,solo=0");
  dev_ = std::make_unique<BackendDevice>(*vt, 0, options_);
}

NodeRun BackendUnderTest::run(pi_node node, std::initializer_list<const HostTensor*> srcs,
                              HostTensor& dst) {
  std::vector<DeviceBuffer> buffers;
  buffers.reserve(srcs.size() + 1);
  node.n_src = static_cast<uint32_t>(srcs.size());
  int i = 0;
  for (const HostTensor* s : srcs) {
    node.src[i] = pi_tensor{};
    if (s != nullptr) {
      buffers.push_back(DeviceBuffer::allocate(*dev_, s->bytes.size()));
      buffers.back().write(0, s->bytes.data(), s->bytes.size());
      node.src[i] = bind(*s, buffers.back());
    }
    ++i;
  }
  buffers.push_back(DeviceBuffer::allocate(*dev_, dst.bytes.size()));
  const DeviceBuffer& out = buffers.back();
  out.write(0, dst.bytes.data(), dst.bytes.size());
  node.dst = bind(dst, out);

  const pi_backend_vtable& vt = dev_->vt();
  NodeRun r{vt.supports(dev_->handle(), &node) != 0, PI_OK, ""};
  const pi_graph graph{&node, 1};
  r.status = vt.graph_submit(dev_->stream(), &graph);
  if (r.status != PI_OK) {
    r.error = vt.last_error(dev_->handle());
    return r;
  }
  dev_->sync();
  out.read(0, dst.bytes.data(), dst.bytes.size());
  return r;
}

}  // namespace polyinfer::conformance
