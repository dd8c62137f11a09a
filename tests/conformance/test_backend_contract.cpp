// What the conformance matrix demands of a backend besides numbers: a node it
// cannot run is refused by supports() and by graph_submit() with
// PI_ERR_UNSUPPORTED and a message; a backend name this build lacks is an
// error, not a skip.
#include <string>

#include "backend_under_test.hpp"
#include "random_data.hpp"

namespace polyinfer::conformance {
namespace {

class BackendContract : public ConformanceTest {};

TEST_F(BackendContract, UnsupportedNodeIsRefusedWithAMessage) {
  Rng rng(case_seed("CONTRACT/i32_weight"));
  HostTensor w = contiguous(GgmlType::I32, {32, 4, 1, 1});
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 32; ++i) w.i32(i, r) = static_cast<int32_t>(rng() % 100) + 1;
  }
  HostTensor a = contiguous(GgmlType::F32, {32, 2, 1, 1});
  fill_normal(a, rng);
  HostTensor dst = contiguous(GgmlType::F32, {4, 2, 1, 1});
  pi_node node{};
  node.op = PI_OP_MUL_MAT;
  const NodeRun r = backend().run(node, {&w, &a}, dst);
  EXPECT_FALSE(r.supported) << "supports() accepted MUL_MAT with an I32 weight";
  EXPECT_EQ(r.status, PI_ERR_UNSUPPORTED);
  EXPECT_FALSE(r.error.empty()) << "last_error() is empty after PI_ERR_UNSUPPORTED";
}

TEST(BackendSelection, UnknownBackendNameIsAnError) {
  std::string reason;
  EXPECT_EQ(find_backend("no-such-backend", &reason), nullptr);
  EXPECT_EQ(reason.rfind("backend 'no-such-backend' is not usable here (not found", 0), 0u)
      << reason;
}

TEST(BackendSelection, CpuIsAlwaysThere) {
  std::string reason;
  const pi_backend_vtable* vt = find_backend("cpu", &reason);
  ASSERT_NE(vt, nullptr) << reason;
  EXPECT_EQ(vt->abi_version, PI_ABI_VERSION);
}

}  // namespace
}  // namespace polyinfer::conformance
