// MUL_MAT: weights W [K, N, B2, B3] of every stored type times F32 activations
// A [K, M, B2', B3'] -> F32 [N, M, B2', B3'], W broadcast over B2'/B2 (and
// B3'/B3): dst[n, m, b2, b3] = Σ_k W[k, n, b2 / (B2'/B2), b3 / (B3'/B3)] · A[k, m, b2, b3].
#include <array>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "backend_under_test.hpp"
#include "expect_within.hpp"
#include "random_data.hpp"
#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

enum class RowLen { kShort, kLong, kVeryLong, kSegments, kDown8, kDown16, kFull };

struct MatShape {
  std::string name;
  int64_t n, m;     // weight rows, activation columns
  int64_t b2, b2a;  // batch of W and of A (b2a a multiple of b2)
  RowLen len = RowLen::kShort;
  // W and A start 4 bytes past a 16-byte boundary, W with 4 bytes between
  // rows: row starts at other offsets within 16 bytes than the blocks alone
  // give (always 0 for Q4_K), word-aligned as every backend may assume.
  bool unaligned = false;
  int64_t b3 = 1, b3a = 1;  // the outer batch of W and of A (b3a a multiple of b3)
  // Only for types of 256-value super-blocks (K-quants): the shape's F32
  // weights would pass the 128 MiB that lavapipe binds at once.
  bool kquants_only = false;
};

// Row lengths: several blocks (an odd count of 32-blocks, two super-blocks),
// and for plain types a length no SIMD width divides. Long rows hold more
// units (blocks, 8-value groups) than a decode workgroup has invocations, an
// odd count of them, and for plain types a ragged end. Very long rows span
// three of the CUDA decode kernel's staged segments (4,096 values; 2,048 for
// F16), the last one partial, so that several warps share a row. kSegments
// rows are longer than the Vulkan matrix-vector kernel stages at once (up to
// 4,096 values of Q4_0 and Q4_K, 2,048 of Q5_K, Q6_K and Q8_0, 1,024 of F16)
// and no multiple of that; kFull rows (4,096) are whole segments of the
// longest kind, that kernel's largest shared memory. Both plain lengths are
// multiples of 8, as its F16 path needs. kDown8 and kDown16 rows are down
// projections' lengths (over 4,096 and 8,192 values, up to 16,384; the CUDA
// F16 decode kernel holds up to 8,192 or 16,384 activations in registers),
// multiples of 32 as its matrix-vector path needs, 16-byte aligned F16 rows
// four chunks of 8 past a whole pass of its 256 threads.
int64_t k_for(GgmlType type, RowLen len) {
  const int64_t block = traits(type).block_size;
  if (len == RowLen::kFull) return 4096;
  const int i = static_cast<int>(len);
  if (block == 1) return std::array<int64_t, 6>{97, 1029, 4133, 2072, 6176, 14368}[i];
  if (block == 32) return std::array<int64_t, 6>{5, 77, 301, 131, 193, 449}[i] * 32;
  return std::array<int64_t, 6>{2, 11, 37, 19, 25, 57}[i] * 256;
}

// W [k, n, b2, b3] laid out as the shape says.
HostTensor weights(GgmlType type, const MatShape& s, int64_t k) {
  if (!s.unaligned) return contiguous(type, {k, s.n, s.b2, s.b3});
  const uint64_t row = row_size(type, k) + 4;
  const Strides nb{traits(type).type_size, row, row * s.n, row * s.n * s.b2};
  return strided(type, {k, s.n, s.b2, s.b3}, nb, kLeadBytes + 4,
                 kLeadBytes + 4 + nb[3] * static_cast<uint64_t>(s.b3));
}
// A [k, m, b2a, b3a] laid out as the shape says.
HostTensor activations(const MatShape& s, int64_t k) {
  if (!s.unaligned) return contiguous(GgmlType::F32, {k, s.m, s.b2a, s.b3a});
  const uint64_t row = 4 * static_cast<uint64_t>(k);
  const Strides nb{4, row, row * s.m, row * s.m * s.b2a};
  return strided(GgmlType::F32, {k, s.m, s.b2a, s.b3a}, nb, kLeadBytes + 4,
                 kLeadBytes + 4 + nb[3] * static_cast<uint64_t>(s.b3a));
}

struct MulMatCase {
  GgmlType type;
  MatShape shape;
};

// gtest names a failing case by this instead of its bytes.
void PrintTo(const MulMatCase& c, std::ostream* os) {
  *os << type_name(c.type) << "/" << c.shape.name;
}

class MulMat : public ConformanceTestWithParam<MulMatCase> {};

TEST_P(MulMat, MatchesReference) {
  const auto& [type, s] = GetParam();
  const std::string name = std::string(type_name(type)) + "/" + s.name;
  Rng rng(case_seed("MUL_MAT/" + name));
  const int64_t k = k_for(type, s.len);
  HostTensor w = weights(type, s, k);
  fill_weights(w, rng);
  HostTensor a = activations(s, k);
  fill_normal(a, rng);
  HostTensor dst = contiguous(GgmlType::F32, {s.n, s.m, s.b2a, s.b3a});
  pi_node node{};
  node.op = PI_OP_MUL_MAT;
  const NodeRun r = backend().run(node, {&w, &a}, dst);
  ASSERT_TRUE(r.ok()) << r.describe();

  const int64_t act_block = mul_mat_act_block(type);
  std::vector<double> want, bound;
  for (int64_t b3 = 0; b3 < s.b3a; ++b3) {
    for (int64_t b = 0; b < s.b2a; ++b) {
      for (int64_t m = 0; m < s.m; ++m) {
        const std::vector<double> av = a.row_values(m, b, b3);
        for (int64_t n = 0; n < s.n; ++n) {
          const std::vector<double> wv = w.row_values(n, b / (s.b2a / s.b2), b3 / (s.b3a / s.b3));
          double sum = 0, mag = 0;
          for (int64_t i = 0; i < k; ++i) {
            sum += wv[i] * av[i];
            mag += std::fabs(wv[i] * av[i]);
          }
          const double amag = act_block > 0 ? block_weighted_amax(wv, av, act_block) : 0.0;
          want.push_back(sum);
          bound.push_back(mul_mat_bound(type, k, mag, amag));
        }
      }
    }
  }
  expect_output(dst, want, bound, "MUL_MAT " + name);
}

const MatShape kShapes[] = {
    {"vector", 37, 1, 1, 1},  // decode: one activation column
    {"vector_long", 37, 1, 1, 1, RowLen::kLong},
    {"vector_very_long", 13, 1, 1, 1, RowLen::kVeryLong},
    {"vector_down8", 37, 1, 1, 1, RowLen::kDown8},
    {"vector_down16", 13, 1, 1, 1, RowLen::kDown16},
    // Decode with 2, 3, 5 and 8 columns; row counts that no rows-per-workgroup divides.
    {"cols2", 41, 2, 1, 1},
    {"cols3_very_long", 9, 3, 1, 1, RowLen::kVeryLong},
    {"cols5_long", 19, 5, 1, 1, RowLen::kLong},
    {"cols8", 23, 8, 1, 1},
    // Enough rows for several per workgroup (the Vulkan matrix-vector kernels
    // take up to 8, fewer with more columns or fewer rows), the last
    // workgroup's rows partly past the end.
    {"vector_rows", 2051, 1, 1, 1, RowLen::kFull},
    {"vector_rows_4099", 4099, 1, 1, 1, RowLen::kFull},  // past 4,096 rows: CUDA F16, 2 per block
    {"vector_rows_8195", 8195, 1, 1, 1},  // past 8,192 rows: Vulkan Q4_0, 4 per workgroup
    // Past 8,192 rows of 4,096 values (over 16 MiB of Q4_K): CUDA Q4_K and
    // Q6_K with each lane's activations held in registers over a one-wave
    // grid (matvec_held.cu).
    {"vector_rows_8195_full", 8195, 1, 1, 1, RowLen::kFull, false, 1, 1, true},
    {"cols3_rows", 1029, 3, 1, 1},
    {"cols8_rows", 601, 8, 1, 1},
    {"cols5_rows_full", 261, 5, 1, 1, RowLen::kFull},  // Vulkan F16: one row per workgroup
    // Rows staged in several segments, also with 2 columns.
    {"vector_segments", 1031, 1, 1, 1, RowLen::kSegments},
    {"cols2_segments", 515, 2, 1, 1, RowLen::kSegments},
    {"vector_unaligned", 1031, 1, 1, 1, RowLen::kSegments, true},
    {"cols2_unaligned", 515, 2, 1, 1, RowLen::kLong, true},
    {"matrix", 67, 19, 1, 1},         // ragged against any tile size
    {"batch_broadcast", 5, 3, 2, 4},  // B2' = 2 x B2
    // Prefill over several tiles of each GEMM (Vulkan's are 64 x 64 and, with
    // cooperative matrices, 128 rows x 64 or 128 columns), the last ones ragged; with
    // rows of many K steps, with unaligned starts, and with broadcast batches.
    {"matrix_tiles", 300, 70, 1, 1, RowLen::kLong},
    {"matrix_unaligned", 131, 33, 1, 1, RowLen::kShort, true},
    {"matrix_batch", 37, 12, 2, 4},
    {"matrix_wide", 150, 200, 1, 1},  // two tiles of 128 columns, the second ragged
    // W broadcast over the outer batch too (B3' = 3 x B3), in decode and prefill.
    {"batch3_broadcast", 5, 3, 2, 2, RowLen::kShort, false, 1, 3},
    {"matrix_batch3", 37, 12, 1, 2, RowLen::kShort, false, 2, 4},
};

std::vector<MulMatCase> all_cases() {
  std::vector<MulMatCase> cases;
  for (GgmlType t : kComputeTypes) {
    for (const MatShape& s : kShapes) {
      if (!s.kquants_only || traits(t).block_size == 256) cases.push_back({t, s});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MulMat, ::testing::ValuesIn(all_cases()), [](const auto& info) {
  return std::string(type_name(info.param.type)) + "_" + info.param.shape.name;
});

}  // namespace
}  // namespace polyinfer::conformance
