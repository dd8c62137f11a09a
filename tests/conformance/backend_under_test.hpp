// The backend the conformance matrix runs against, reached only through its
// plugin vtable. Chosen by the environment:
//   POLYINFER_CONFORMANCE_BACKEND  backend name, "cpu" when unset
//   POLYINFER_CONFORMANCE_OPTIONS  device_open options, "threads=4,solo=0" when unset
//                                  (an uneven split of the ragged test shapes; solo=0:
//                                  even the small cases go over the CPU pool's threads)
// A name this build cannot reach is an error that fails every test, never a skip.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "backend/device.hpp"
#include "host_tensor.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::conformance {

// The vtable of a backend by name; nullptr and a one-line reason when this
// build has no such backend.
const pi_backend_vtable* find_backend(std::string_view name, std::string* reason);

// A pi_tensor for host tensor t placed in device buffer buf at t.offset:
// t's type, ne and nb.
pi_tensor bind(const HostTensor& t, const DeviceBuffer& buf);

// What happened to one node: supports() and graph_submit() as the backend answered.
struct NodeRun {
  bool supported;
  pi_status status;
  std::string error;  // last_error() after a failed submit
  bool ok() const { return supported && status == PI_OK; }
  std::string describe() const;
};

class BackendUnderTest {
 public:
  // Opens device 0 of the backend the environment names. Throws polyinfer::Error.
  BackendUnderTest();

  // Runs one node: every source (nullptr: absent input) and the destination
  // (with its poison) go to fresh device buffers; the node's tensors are bound
  // to them; supports() is asked, the one-node graph submitted and the stream
  // synced; the destination's whole buffer is read back into dst.bytes.
  // `node` gives op, i[] and f[]; its tensors are filled in here.
  NodeRun run(pi_node node, std::initializer_list<const HostTensor*> srcs, HostTensor& dst);

  // The opened device, for tests of buffers and streams beyond one node.
  BackendDevice& device() { return *dev_; }
  // The device_open options it was opened with.
  const std::string& options() const { return options_; }

 private:
  std::unique_ptr<BackendDevice> dev_;
  std::string options_;
};

// Test fixture base: opens the backend in SetUp, failing the test with the
// reason when it cannot.
template <typename Base = ::testing::Test>
class WithBackend : public Base {
 protected:
  void SetUp() override {
    try {
      backend_ = std::make_unique<BackendUnderTest>();
    } catch (const std::exception& e) {
      FAIL() << e.what();
    }
  }
  BackendUnderTest& backend() { return *backend_; }

 private:
  std::unique_ptr<BackendUnderTest> backend_;
};

using ConformanceTest = WithBackend<>;
template <typename Param>
using ConformanceTestWithParam = WithBackend<::testing::TestWithParam<Param>>;

}  // namespace polyinfer::conformance
