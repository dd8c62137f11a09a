// The CPU backend's GET_ROWS decodes quantized rows with vector instructions
// (ops_get_rows.cpp): its floats must be the reference dequantize_row's bits,
// for every block type the matmul engines unpack, on rows of several blocks of
// random bytes (every code and scale byte) with random float16 scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "conformance/host_tensor.hpp"
#include "conformance/random_data.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer {
namespace {

using conformance::HostTensor;

// The tensor as the CPU backend sees it: its buffer handle is its address.
pi_tensor cpu_view(HostTensor& t) {
  pi_tensor v{};
  v.type = static_cast<uint32_t>(t.type);
  for (int d = 0; d < 4; ++d) v.ne[d] = t.ne[d], v.nb[d] = t.nb[d];
  v.buffer = static_cast<pi_buffer>(static_cast<void*>(t.bytes.data()));
  v.offset = t.offset;
  return v;
}

class CpuGetRows : public ::testing::TestWithParam<GgmlType> {};

TEST_P(CpuGetRows, QuantizedRowsAreTheReferenceBits) {
  const GgmlType type = GetParam();
  const std::string name(type_name(type));
  conformance::Rng rng(conformance::case_seed("CPU_GET_ROWS/" + name));
  const int64_t k = 4 * traits(type).block_size, vocab = 9;
  HostTensor table = conformance::contiguous(type, {k, vocab, 1, 1});
  conformance::fill_random_blocks(table, rng);
  const std::vector<int32_t> pick{8, 0, 5, 8, 3};
  const auto n = static_cast<int64_t>(pick.size());
  HostTensor ids = conformance::contiguous(GgmlType::I32, {n, 1, 1, 1});
  for (int64_t i = 0; i < n; ++i) ids.i32(i, 0) = pick[i];
  HostTensor out = conformance::contiguous(GgmlType::F32, {k, n, 1, 1});
  for (int64_t i = 0; i < n; ++i) {
    std::vector<float> poison(k, NAN);
    std::memcpy(out.row(i), poison.data(), 4 * k);
  }

  pi_node get{};
  get.op = PI_OP_GET_ROWS;
  get.n_src = 2;
  get.src[0] = cpu_view(table);
  get.src[1] = cpu_view(ids);
  get.dst = cpu_view(out);
  const pi_backend_vtable& cpu = *polyinfer_cpu_backend_entry();
  pi_device dev = nullptr;
  pi_stream s = nullptr;
  ASSERT_EQ(cpu.device_open(0, "threads=2", &dev), PI_OK);
  ASSERT_EQ(cpu.stream_create(dev, &s), PI_OK);
  ASSERT_EQ(cpu.supports(dev, &get), 1);
  const pi_graph g{&get, 1};
  EXPECT_EQ(cpu.graph_submit(s, &g), PI_OK);
  cpu.stream_destroy(s);
  cpu.device_close(dev);

  std::vector<float> want(static_cast<size_t>(k)), got(static_cast<size_t>(k));
  for (int64_t i = 0; i < n; ++i) {
    dequantize_row(type, table.row(pick[i]), want.data(), k);
    std::memcpy(got.data(), out.row(i), 4 * k);
    for (int64_t e = 0; e < k; ++e) {
      ASSERT_EQ(std::memcmp(&got[e], &want[e], 4), 0)
          << name << " row " << pick[i] << " value " << e << ": " << got[e] << " vs " << want[e];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BlockTypes, CpuGetRows,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                                           GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K,
                                           GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                           GgmlType::Q6_K),
                         [](const auto& info) { return std::string(type_name(info.param)); });

}  // namespace
}  // namespace polyinfer
