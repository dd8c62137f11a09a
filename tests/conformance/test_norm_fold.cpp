// A product, the residual ADD, RMS_NORM, MUL and three products over the
// MUL's output, one column, as a decode step submits them between two layers,
// at row lengths of 256, 2,080 (the last of a thread's chunks of 8 values
// past the row) and 4,096 values (the longest the folded kernel takes), the
// first product's rows as long as the others or, as a down projection's,
// 6,176 and 14,368 values (the CUDA kernel then holds them over 256 threads),
// and Q/K/V rows past 8,192 in all (4 rows per block; on CUDA, Q4_K or Q6_K
// of 4,096 values, the kernel that holds each lane's activations in registers,
// matvec_held.cu): CUDA folds the ADD
// into the first product's kernel and the norm into the next products'
// (fusion.hpp's kMatvecAdd and kNormMatvec) when the weights are F16; with
// Q4_0, Q4_K or Q6_K weights over 4,096-8,192 values, the ADD, RMS_NORM and
// MUL into the first product's kernel, which quantizes sum · w for the next
// products (kMatvecNormQ), whose rows are a down projection's 14,336 values
// or as long as the others; with Q4_0, Q4_K, Q5_K or Q6_K products after the
// norm over at most 4,096 values (llama-1b's 2,048; 2,080 for Q4_0, whose
// last pass of a warp is partly past the row), the ADD into the first
// product's kernel (any quantized type, Q8_0 too) and the norm into the next
// products', whose blocks each make the 8-bit blocks of x · w (kMatvecAdd,
// kNormMatvec); every length is a multiple of 32 (256 for K-quants), as its
// matrix-vector path needs (tests/unit/test_cuda_fusion.cpp checks that these
// graphs fold); also with a Q8_0 product before the norm, and with V of
// another type than Q and K: Q6_K, as in Q4_K_M models, in Q and K's launch
// (one row per warp, each dotted as its matrix's type), or launched apart:
// Q8_0, which quantizes the MUL's output again, with the residual codes, and
// Q5_K, which folds the norm again (and after a Q4_0 product, on Vulkan, is
// the staged kernel scaling its sums by the norm whose codes the product's
// workgroups made: vk_fusion.hpp's Unit::norm; also Q4_K and Q6_K products
// after a Q4_0 one, the direct kernel scaling). Also with the RMS_NORM's and
// MUL's outputs scratch (PI_NODE_SCRATCH; those two then not compared): the
// Vulkan plugin then runs no norm dispatch where only products reading the
// blocks' codes read them (vk_fusion.cpp's drop_unread_norms), and keeps it
// where a Q8_0 V reads the MUL's output as floats. Every node's output is compared
//   * with the same backend opened with `fusion=0`: the folded kernels
//     multiply by the norm's weight before its scale and sum the squares in
//     another order, a few float32 roundings: 1e-4 of the tensor's largest
//     magnitude; quantized products' 8-bit activations are blocks of sum · w
//     there, of norm · w unfused, where a rounding may land a value on the
//     other side of a code (1/127 of its block's largest): 1e-2 for them;
//   * with the same backend's first run, when run again (1e-6);
//   * with the CPU backend, whose F16 products round the activations to F16:
//     1e-2 of the largest magnitude (5e-2 for quantized products, whose
//     activations the CPU quantizes its own way).
// The Q, K and V row counts are odd, so that a block's rows straddle two
// matrices and the last block is partly past the end.
#include <algorithm>
#include <cmath>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "arena_graph.hpp"
#include "backend_under_test.hpp"
#include "pi_node_builder.hpp"
#include "random_data.hpp"

namespace polyinfer::conformance {
namespace {

using test_graph::node;

// Arena slots: the first product, the sum, the norm, the MUL, then Q, K, V.
enum Slot : int { kD, kSum, kNorm, kXn, kQ, kK, kV, kSlots };

struct Fold {
  HostTensor a, res, nw, w1, wq[3];
};

struct Lengths {
  int64_t k;                      // the norm's vector, the rows of Q, K and V
  int64_t k1;                     // the first product's rows
  bool many = false;              // Q, K and V of 4,099, 2,053 and 2,051 rows, not 37, 19 and 21
  GgmlType type = GgmlType::F16;  // the products' weights, but for:
  std::optional<GgmlType> first = std::nullopt;  // the first product's (a down projection's Q6_K)
  std::optional<GgmlType> v = std::nullopt;      // V's (Q4_K_M's Q6_K)
  // RMS_NORM's and MUL's outputs scratch (PI_NODE_SCRATCH), not compared.
  bool scratch = false;

  GgmlType type_of(int product) const {
    return product == 0 ? first.value_or(type) : product == 3 ? v.value_or(type) : type;
  }

  int64_t rows(int m) const {
    static constexpr int64_t kFew[3] = {37, 19, 21}, kMany[3] = {4099, 2053, 2051};
    return many ? kMany[m] : kFew[m];
  }
  // Values per arena slot: the longest output, rounded up to 16 bytes (the
  // folds take 16-byte aligned vectors only).
  int64_t slot() const { return (std::max(k, rows(0)) + 3) / 4 * 4; }
};

// Writes the inputs, poisons the arena, submits the seven nodes and reads
// the arena back (l.slot() values per slot; the first product reads in.a,
// l.k1 values); empty when a node is not supported.
std::vector<float> run(const BackendDevice& dev, const Fold& in, const Lengths& l) {
  const int64_t k = l.k, slot = l.slot();
  DeviceBuffer a = DeviceBuffer::allocate(dev, in.a.bytes.size()),
               res = DeviceBuffer::allocate(dev, in.res.bytes.size()),
               nw = DeviceBuffer::allocate(dev, in.nw.bytes.size()),
               w1 = DeviceBuffer::allocate(dev, in.w1.bytes.size()),
               arena = DeviceBuffer::allocate(dev, kSlots * 4 * slot);
  std::vector<DeviceBuffer> wq;
  for (const HostTensor& w : in.wq) wq.push_back(DeviceBuffer::allocate(dev, w.bytes.size()));
  const std::pair<const HostTensor*, DeviceBuffer*> uploads[] = {
      {&in.a, &a},         {&in.res, &res},     {&in.nw, &nw},      {&in.w1, &w1},
      {&in.wq[0], &wq[0]}, {&in.wq[1], &wq[1]}, {&in.wq[2], &wq[2]}};
  for (const auto& [h, b] : uploads) b->write(0, h->bytes.data(), h->bytes.size());
  const auto at = [&](int s, int64_t n) {
    pi_tensor t = test_graph::tensor(0, arena.handle(), static_cast<uint64_t>(s) * 4 * slot, {n});
    return t;
  };
  std::vector<pi_node> g;
  g.push_back(node(PI_OP_MUL_MAT, {bind(in.w1, w1), bind(in.a, a)}, at(kD, k)));
  g.push_back(node(PI_OP_ADD, {at(kD, k), bind(in.res, res)}, at(kSum, k)));
  g.push_back(node(PI_OP_RMS_NORM, {at(kSum, k)}, at(kNorm, k)));
  g.back().f[0] = 1e-5f;
  g.push_back(node(PI_OP_MUL, {at(kNorm, k), bind(in.nw, nw)}, at(kXn, k)));
  if (l.scratch) g[2].flags = g[3].flags = PI_NODE_SCRATCH;
  for (int m = 0; m < 3; ++m)
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wq[m], wq[m]), at(kXn, k)}, at(kQ + m, l.rows(m))));
  return submit_over_poison(dev, arena, g, kSlots * slot);
}

// got within rel · max|want| of want, slot by slot (NaN fails); the
// products after the norm within rel_next.
void compare(const std::vector<float>& got, const std::vector<float>& want, const Lengths& l,
             double rel, double rel_next, const std::string& vs) {
  const char* names[kSlots] = {"MUL_MAT",   "ADD",       "RMS_NORM", "MUL",
                               "MUL_MAT Q", "MUL_MAT K", "MUL_MAT V"};
  std::vector<SlotCheck> slots;
  for (int s = 0; s < kSlots; ++s) {
    const bool scratch = l.scratch && (s == kNorm || s == kXn);
    slots.push_back({names[s],
                     scratch   ? 0
                     : s >= kQ ? l.rows(s - kQ)
                               : l.k,
                     s >= kQ ? rel_next : rel});
  }
  compare_slots(got, want, slots, l.slot(), vs);
}

class NormFold : public ConformanceTestWithParam<Lengths> {};

// "k4096", "k4096_in14368" where the first product's rows are longer,
// "..._many_rows" with Q, K and V of thousands of rows.
std::string fold_name(const Lengths& l) {
  std::string name = "k";
  name += std::to_string(l.k);
  if (l.k1 != l.k) {
    name += "_in";
    name += std::to_string(l.k1);
  }
  if (l.many) name += "_many_rows";
  if (l.type != GgmlType::F16) {
    name += "_";
    name += type_name(l.type);
  }
  if (l.first) {
    name += "_first_";
    name += type_name(*l.first);
  }
  if (l.v) {
    name += "_v_";
    name += type_name(*l.v);
  }
  if (l.scratch) name += "_scratch";
  return name;
}

std::ostream& operator<<(std::ostream& os, const Lengths& l) {
  return os << fold_name(l);
}

TEST_P(NormFold, MatchesUnfusedAndCpu) {
  const Lengths& l = GetParam();
  const int64_t k = l.k, k1 = l.k1;
  std::string seed = "NORM_FOLD/";
  seed += fold_name(l);
  Rng rng(case_seed(seed));
  Fold in{contiguous(GgmlType::F32, {k1, 1, 1, 1}),
          contiguous(GgmlType::F32, {k, 1, 1, 1}),
          contiguous(GgmlType::F32, {k, 1, 1, 1}),
          contiguous(l.type_of(0), {k1, k, 1, 1}),
          {contiguous(l.type_of(1), {k, l.rows(0), 1, 1}),
           contiguous(l.type_of(2), {k, l.rows(1), 1, 1}),
           contiguous(l.type_of(3), {k, l.rows(2), 1, 1})}};
  for (HostTensor* t : {&in.a, &in.res, &in.nw}) fill_normal(*t, rng);
  fill_normal(in.w1, rng, 1.0 / std::sqrt(static_cast<double>(k1)));
  const double sigma = 1.0 / std::sqrt(static_cast<double>(k));
  for (HostTensor* t : {&in.wq[0], &in.wq[1], &in.wq[2]}) fill_normal(*t, rng, sigma);
  const FoldRuns r = fold_runs(backend(), [&](const BackendDevice& d) { return run(d, in, l); });
  if (r.fused.empty())
    GTEST_SKIP() << backend().device().name() << " does not support a node of this graph";
  compare(r.again, r.fused, l, 1e-6, 1e-6, "the same graph again");
  const bool quantized = l.type != GgmlType::F16;
  compare(r.fused, r.unfused, l, 1e-4, quantized ? 1e-2 : 1e-4, "fusion=0");
  compare(r.fused, r.cpu, l, 1e-2, quantized ? 5e-2 : 1e-2, "cpu");
}

INSTANTIATE_TEST_SUITE_P(
    RowLengths, NormFold,
    ::testing::Values(
        Lengths{256, 256}, Lengths{2080, 2080}, Lengths{4096, 4096}, Lengths{2080, 6176},
        Lengths{4096, 14368}, Lengths{4096, 4096, true}, Lengths{4096, 4096, false, GgmlType::Q4_K},
        Lengths{4096, 14336, false, GgmlType::Q4_K}, Lengths{4096, 4096, true, GgmlType::Q4_K},
        Lengths{4096, 4096, true, GgmlType::Q6_K}, Lengths{4096, 14336, false, GgmlType::Q6_K},
        Lengths{4096, 4096, false, GgmlType::Q4_0}, Lengths{8192, 8192, false, GgmlType::Q4_0},
        Lengths{4096, 4096, false, GgmlType::Q4_K, GgmlType::Q8_0},
        Lengths{4096, 14336, false, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q6_K},
        Lengths{4096, 4096, false, GgmlType::Q4_K, std::nullopt, GgmlType::Q8_0},
        Lengths{2048, 2048, false, GgmlType::Q4_K}, Lengths{2048, 2048, true, GgmlType::Q6_K},
        Lengths{2080, 2080, false, GgmlType::Q4_0}, Lengths{2048, 2048, true, GgmlType::Q4_0},
        Lengths{2048, 8192, true, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q6_K},
        Lengths{2048, 2048, false, GgmlType::Q4_K, GgmlType::Q8_0},
        Lengths{2048, 2048, false, GgmlType::Q4_K, std::nullopt, GgmlType::Q8_0},
        Lengths{2048, 2048, true, GgmlType::Q4_K, std::nullopt, GgmlType::Q5_K},
        Lengths{4096, 4096, true, GgmlType::Q4_0, std::nullopt, GgmlType::Q5_K},
        Lengths{4096, 4096, false, GgmlType::Q4_K, GgmlType::Q4_0},
        Lengths{4096, 4096, false, GgmlType::Q6_K, GgmlType::Q4_0},
        Lengths{4096, 4096, false, GgmlType::Q5_K},
        Lengths{4096, 4096, false, GgmlType::Q4_0, std::nullopt, std::nullopt, true},
        Lengths{2048, 2048, true, GgmlType::Q4_K, std::nullopt, GgmlType::Q6_K, true},
        Lengths{2048, 2048, false, GgmlType::Q4_K, std::nullopt, GgmlType::Q8_0, true}),
    [](const auto& info) { return fold_name(info.param); });

}  // namespace
}  // namespace polyinfer::conformance
