// kOpMulMat (PI_OP_MUL_MAT on the CPU) through a small harness that runs
// op.run on 1 and 2 threads with a shared ThreadBarrier, as the backend does:
// batch broadcast (B2' = 2 * B2, B3' = 3 * B3), src1 rows with padded strides,
// dst with padded row and batch strides, rows and columns not multiples of
// the tiles. Reference: float64 dot of the dequantized weight row with the
// activations as the kernel sees them (decoded from convert_act, as in
// test_cpu_matmul), tolerance 1e-5 * |W|.|Aq|; the kernels' accuracy against
// the F32 activations is test_cpu_matmul's subject. dst is poisoned with NaN
// so unwritten outputs fail and the stride gaps must stay NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/matmul_kernels.hpp"
#include "backends/cpu/op_context.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "matmul_test_data.hpp"

namespace polyinfer::cpu {
namespace {

pi_tensor make_tensor(GgmlType type, std::array<int64_t, 4> ne, std::array<uint64_t, 4> nb,
                      void* data) {
  pi_tensor t{};
  t.type = static_cast<uint32_t>(type);
  for (int i = 0; i < 4; ++i) {
    t.ne[i] = ne[i];
    t.nb[i] = nb[i];
  }
  t.buffer = reinterpret_cast<pi_buffer>(data);  // a CPU buffer handle is its host address
  t.offset = 0;
  return t;
}

// Runs op on nth threads, thread 0 being the caller.
void run_op(const OpImpl& op, const pi_node& node, int nth) {
  std::vector<uint8_t> work(op.work_size(node, nth) + 64);
  uint8_t* base = work.data() + (64 - reinterpret_cast<uintptr_t>(work.data()) % 64) % 64;
  const std::span<uint8_t> scratch(base, op.work_size(node, nth));
  ThreadBarrier barrier(nth);
  std::vector<std::thread> threads;
  for (int ith = 1; ith < nth; ++ith) {
    threads.emplace_back([&, ith] { op.run(OpContext{node, ith, nth, barrier, scratch}); });
  }
  op.run(OpContext{node, 0, nth, barrier, scratch});
  for (std::thread& t : threads) t.join();
}

// The activations the kernel multiplies (F32 and BF16 weights: the F32 row itself).
std::vector<double> kernel_view(GgmlType type, int64_t n_cols, const float* x, int64_t k) {
  const MatmulKernels& mk = *matmul_kernels(type, n_cols);
  std::vector<uint8_t> row(mk.act_row_size(k));
  mk.convert_act(x, row.data(), k);
  std::vector<double> out(static_cast<size_t>(k));
  if (testing::f16_activations(type)) {
    for (int64_t e = 0; e < k; ++e) {
      out[e] = testing::f16_value(testing::read_u16(row.data() + 2 * e));
    }
    return out;
  }
  if (testing::is_float_type(type, n_cols)) {
    for (int64_t e = 0; e < k; ++e) out[e] = x[e];
    return out;
  }
  const ActLayout layout = act_layout(k, testing::act_block(type));
  const ActRow a = act_row(row.data(), layout);
  for (int64_t e = 0; e < k; ++e) out[e] = double{a.d[e / layout.block]} * a.qs[e];
  return out;
}

void check_op(GgmlType type, int64_t k, int64_t n, int64_t m, int nth) {
  SCOPED_TRACE(std::string(type_name(type)) + " k=" + std::to_string(k) + " n=" +
               std::to_string(n) + " m=" + std::to_string(m) + " threads=" + std::to_string(nth));
  constexpr int64_t kB2 = 2, kB3 = 1, kR2 = 2, kR3 = 3;  // src1 batches: 4 x 3
  const int64_t b2 = kB2 * kR2, b3 = kB3 * kR3;
  const size_t row_bytes = row_size(type, k);

  // src0: kB2 x kB3 weight matrices, contiguous.
  std::vector<uint8_t> w_bytes;
  std::vector<std::vector<double>> w_values;
  for (int64_t b = 0; b < kB2 * kB3; ++b) {
    const auto wm = testing::random_weights(type, k, n, 500 + static_cast<uint32_t>(b));
    for (int64_t r = 0; r < n; ++r) {
      const uint8_t* src = wm.bytes.data() + r * wm.stride;
      w_bytes.insert(w_bytes.end(), src, src + row_bytes);
    }
    w_values.push_back(wm.values);
  }
  const uint64_t wts = traits(type).type_size;
  const pi_tensor w = make_tensor(
      type, {k, n, kB2, kB3}, {wts, row_bytes, row_bytes * n, row_bytes * n * kB2}, w_bytes.data());

  // src1: rows padded by 3 floats, batches by one more row.
  const uint64_t a1 = 4 * (k + 3), a2 = a1 * (m + 1), a3 = a2 * b2;
  const testing::Matrix x = testing::random_activations(k, m * b2 * b3, 900);
  std::vector<float> a_data(a3 * b3 / 4, std::numeric_limits<float>::quiet_NaN());
  for (int64_t i3 = 0; i3 < b3; ++i3) {
    for (int64_t i2 = 0; i2 < b2; ++i2) {
      for (int64_t i1 = 0; i1 < m; ++i1) {
        std::memcpy(reinterpret_cast<uint8_t*>(a_data.data()) + i1 * a1 + i2 * a2 + i3 * a3,
                    x.row((i3 * b2 + i2) * m + i1), 4 * k);
      }
    }
  }
  const pi_tensor a = make_tensor(GgmlType::F32, {k, m, b2, b3}, {4, a1, a2, a3}, a_data.data());

  // dst: rows padded by 2 floats, batches by 5 floats.
  const uint64_t d1 = 4 * (n + 2), d2 = d1 * m + 20, d3 = d2 * b2;
  std::vector<float> d_data(d3 * b3 / 4, std::numeric_limits<float>::quiet_NaN());
  const pi_tensor d = make_tensor(GgmlType::F32, {n, m, b2, b3}, {4, d1, d2, d3}, d_data.data());

  pi_node node{};
  node.op = PI_OP_MUL_MAT;
  node.n_src = 2;
  node.src[0] = w;
  node.src[1] = a;
  node.dst = d;
  ASSERT_TRUE(kOpMulMat.supports(node));
  run_op(kOpMulMat, node, nth);

  std::vector<bool> written(d_data.size(), false);
  for (int64_t i3 = 0; i3 < b3; ++i3) {
    for (int64_t i2 = 0; i2 < b2; ++i2) {
      const std::vector<double>& wv = w_values[(i3 / kR3) * kB2 + i2 / kR2];
      for (int64_t i1 = 0; i1 < m; ++i1) {
        const std::vector<double> aq = kernel_view(type, m, x.row((i3 * b2 + i2) * m + i1), k);
        for (int64_t r = 0; r < n; ++r) {
          double ref = 0, mag = 0;
          for (int64_t e = 0; e < k; ++e) {
            ref += wv[r * k + e] * aq[e];
            mag += std::fabs(wv[r * k + e] * aq[e]);
          }
          const size_t idx = (i1 * d1 + i2 * d2 + i3 * d3) / 4 + r;
          written[idx] = true;
          ASSERT_LE(std::fabs(d_data[idx] - ref), 1e-5 * mag)
              << "n=" << r << " m=" << i1 << " b2=" << i2 << " b3=" << i3;
        }
      }
    }
  }
  for (size_t i = 0; i < d_data.size(); ++i) {
    if (!written[i]) {
      ASSERT_TRUE(std::isnan(d_data[i])) << "write into a stride gap at float " << i;
    }
  }
}

class MulMatOpTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MulMatOpTest, BroadcastBatchesStridesThreads) {
  const GgmlType type = GetParam();
  const int64_t k = traits(type).block_size == 256 ? 512 : 96;
  for (const int nth : {1, 2}) {
    check_op(type, k, 70, 1, nth);    // matrix-vector: rows split over threads
    check_op(type, k, 21, 9, nth);    // one tile per batch
    check_op(type, k, 67, 260, nth);  // two row tiles x two column tiles
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MulMatOpTest, ::testing::ValuesIn(kComputeTypes),
                         [](const auto& info) { return std::string(type_name(info.param)); });

TEST(MulMatOp, RejectsUnsupportedShapesAndTypes) {
  std::vector<float> buf(4096);
  pi_node node{};
  node.op = PI_OP_MUL_MAT;
  node.n_src = 2;
  node.src[0] = make_tensor(GgmlType::Q4_0, {64, 4, 1, 1}, {18, 36, 144, 144}, buf.data());
  node.src[1] = make_tensor(GgmlType::F32, {64, 3, 2, 1}, {4, 256, 768, 1536}, buf.data());
  node.dst = make_tensor(GgmlType::F32, {4, 3, 2, 1}, {4, 16, 48, 96}, buf.data());
  EXPECT_TRUE(kOpMulMat.supports(node));

  pi_node bad = node;
  bad.src[0].ne[0] = bad.src[1].ne[0] = 48;  // not a multiple of the block
  EXPECT_FALSE(kOpMulMat.supports(bad));
  bad = node;
  bad.src[1].ne[2] = 3;  // 3 batches over 1 weight batch is fine ...
  bad.dst.ne[2] = 3;
  EXPECT_TRUE(kOpMulMat.supports(bad));
  bad.src[0].ne[2] = 2;  // ... over 2 is not
  EXPECT_FALSE(kOpMulMat.supports(bad));
  bad = node;
  bad.src[1].type = static_cast<uint32_t>(GgmlType::F16);
  EXPECT_FALSE(kOpMulMat.supports(bad));
  bad = node;
  bad.src[1].nb[0] = 8;  // non-contiguous rows
  EXPECT_FALSE(kOpMulMat.supports(bad));
  bad = node;
  bad.dst.ne[1] = 2;  // dst shape mismatch
  EXPECT_FALSE(kOpMulMat.supports(bad));
  bad = node;
  bad.src[0].type = static_cast<uint32_t>(GgmlType::IQ4_NL);
  EXPECT_FALSE(kOpMulMat.supports(bad));
}

}  // namespace
}  // namespace polyinfer::cpu
