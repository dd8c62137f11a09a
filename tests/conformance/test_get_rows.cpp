// GET_ROWS: table [K, R] of every stored type, ids I32 [n, b] -> F32 [K, n, b];
// the reference is the table row decoded by polyinfer::dequantize_row.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

// Two blocks for block types, a length no SIMD width divides for plain ones.
int64_t row_length(GgmlType type) {
  const int64_t block = traits(type).block_size;
  return block == 1 ? 67 : 2 * block;
}

class GetRows : public ConformanceTestWithParam<GgmlType> {};

TEST_P(GetRows, MatchesDecodedTableRows) {
  const GgmlType type = GetParam();
  Rng rng(case_seed("GET_ROWS/" + std::string(type_name(type))));
  const int64_t k = row_length(type), n_rows = 23, n = 7, b = 2;
  HostTensor table = contiguous(type, {k, n_rows, 1, 1});
  fill_weights(table, rng);
  HostTensor ids = contiguous(GgmlType::I32, {n, b, 1, 1});
  std::uniform_int_distribution<int32_t> pick(0, n_rows - 1);
  for (int64_t j = 0; j < b; ++j) {
    for (int64_t i = 0; i < n; ++i) ids.i32(i, j) = pick(rng);
  }
  ids.i32(0, 0) = 0;  // first and last rows, and a repeat
  ids.i32(1, 0) = n_rows - 1;
  ids.i32(2, 1) = ids.i32(4, 0);
  HostTensor dst = contiguous(GgmlType::F32, {k, n, b, 1});

  pi_node node{};
  node.op = PI_OP_GET_ROWS;
  const NodeRun r = backend().run(node, {&table, &ids}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  const int64_t block = traits(type).block_size;
  std::vector<double> want, bound;
  for (int64_t j = 0; j < b; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      const std::vector<double> row = table.row_values(ids.i32(i, j));
      for (int64_t e = 0; e < k; ++e) {
        const auto first = row.begin() + e / block * block;
        const double block_max = std::fabs(*std::max_element(
            first, first + block, [](double x, double y) { return std::fabs(x) < std::fabs(y); }));
        want.push_back(row[e]);
        bound.push_back(get_rows_bound(type, block_max));
      }
    }
  }
  expect_output(dst, want, bound, "GET_ROWS " + std::string(type_name(type)));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GetRows, ::testing::ValuesIn(kComputeTypes),
                         [](const auto& info) { return std::string(type_name(info.param)); });

}  // namespace
}  // namespace polyinfer::conformance
