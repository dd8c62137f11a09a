// A llama feed-forward after its norm, one column, as a decode step submits
// it: a product (O), the residual ADD, RMS_NORM, MUL, then the gate and up
// products over the MUL's output, SWIGLU(gate, up) and the down product over
// SWIGLU's output. The Vulkan backend runs gate, up and SWIGLU as one
// dispatch that writes the down product's codes 32 rows at a time, for at
// most 8,192 Q4_0 rows and any number of K-quant rows (vk_fusion.hpp's
// Unit::swiglu); with prequant_min_k=0
// (test_conformance_vulkan_sync) after an O product whose workgroups made the
// norm's codes (Unit::norm), so that gate and up also scale their sums by the
// norm. CUDA folds the norm as its NormFold cases say.
// Rows of 2,048 (gate and up of 512 or 8,192 rows: Q4_0's limit) for
// Q4_0, Q4_K and Q6_K weights; Q4_0 gate and up of 8,224 rows, past its limit
// (SWIGLU's own dispatch); Q4_K and Q6_K gate and up of 8,448 rows (whole
// K-quant blocks for the down product), folded four rows per workgroup.
// SWIGLU scaled by 1.05 in the Vulkan fold failed the seven folded cases.
// Every node's output is compared
//   * with the same backend opened with `fusion=0`: the folded kernels sum in
//     another order, a few float32 roundings: 1e-4 of the tensor's largest
//     magnitude for the nodes before the products; the products' 8-bit
//     activations may round to the other side of a code (1/127 of a block's
//     largest value): 1e-2 for them;
//   * with the same backend's first run, when run again (1e-6): the counts per
//     block that a fold leaves behind must not change the next run;
//   * with the CPU backend, which quantizes the activations its own way:
//     1e-2 of the largest magnitude before the products, 5e-2 after.
#include <algorithm>
#include <cmath>
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

// Arena slots: the O product, the sum, the norm, the MUL, gate, up, SWIGLU, down.
enum Slot : int { kO, kSum, kNorm, kXn, kGate, kUp, kSw, kDown, kSlots };
constexpr int kFirstProduct = kGate;

struct Ffn {
  int64_t k;      // the norm's vector: O's rows, gate's and up's row length, down's rows
  int64_t f;      // gate's and up's rows, down's row length
  GgmlType type;  // every product's weights
  int64_t values(int s) const { return s == kGate || s == kUp || s == kSw ? f : k; }
  int64_t slot() const { return (std::max(k, f) + 3) / 4 * 4; }  // 16-byte aligned vectors
};

struct Inputs {
  HostTensor a, res, nw, wo, wg, wu, wd;
};

// Writes the inputs, poisons the arena, submits the eight nodes and reads the
// arena back (l.slot() values per slot); empty when a node is not supported.
std::vector<float> run(const BackendDevice& dev, const Inputs& in, const Ffn& l) {
  const int64_t slot = l.slot();
  std::vector<DeviceBuffer> bufs;
  const HostTensor* hosts[] = {&in.a, &in.res, &in.nw, &in.wo, &in.wg, &in.wu, &in.wd};
  for (const HostTensor* h : hosts) {
    bufs.push_back(DeviceBuffer::allocate(dev, h->bytes.size()));
    bufs.back().write(0, h->bytes.data(), h->bytes.size());
  }
  DeviceBuffer arena = DeviceBuffer::allocate(dev, kSlots * 4 * slot);
  const auto at = [&](int s) {
    return test_graph::tensor(0, arena.handle(), static_cast<uint64_t>(s) * 4 * slot,
                              {l.values(s)});
  };
  const auto b = [&](int i) { return bind(*hosts[i], bufs[i]); };
  std::vector<pi_node> g;
  g.push_back(node(PI_OP_MUL_MAT, {b(3), b(0)}, at(kO)));
  g.push_back(node(PI_OP_ADD, {at(kO), b(1)}, at(kSum)));
  g.push_back(node(PI_OP_RMS_NORM, {at(kSum)}, at(kNorm)));
  g.back().f[0] = 1e-5f;
  g.push_back(node(PI_OP_MUL, {at(kNorm), b(2)}, at(kXn)));
  g.push_back(node(PI_OP_MUL_MAT, {b(4), at(kXn)}, at(kGate)));
  g.push_back(node(PI_OP_MUL_MAT, {b(5), at(kXn)}, at(kUp)));
  g.push_back(node(PI_OP_SWIGLU, {at(kGate), at(kUp)}, at(kSw)));
  g.push_back(node(PI_OP_MUL_MAT, {b(6), at(kSw)}, at(kDown)));
  return submit_over_poison(dev, arena, g, kSlots * slot);
}

// got within rel · max|want| of want, slot by slot (NaN fails); the products
// and SWIGLU (from gate on) within rel_after.
void compare(const std::vector<float>& got, const std::vector<float>& want, const Ffn& l,
             double rel, double rel_after, const std::string& vs) {
  const char* names[kSlots] = {"MUL_MAT O",    "ADD",        "RMS_NORM", "MUL",
                               "MUL_MAT gate", "MUL_MAT up", "SWIGLU",   "MUL_MAT down"};
  std::vector<SlotCheck> slots;
  for (int s = 0; s < kSlots; ++s)
    slots.push_back({names[s], l.values(s), s >= kFirstProduct ? rel_after : rel});
  compare_slots(got, want, slots, l.slot(), vs);
}

class SwigluFold : public ConformanceTestWithParam<Ffn> {};

// "k2048_f8192_Q4_K".
std::string ffn_name(const Ffn& l) {
  std::string name = "k";
  name += std::to_string(l.k);
  name += "_f";
  name += std::to_string(l.f);
  name += "_";
  name += type_name(l.type);
  return name;
}

std::ostream& operator<<(std::ostream& os, const Ffn& l) {
  return os << ffn_name(l);
}

TEST_P(SwigluFold, MatchesUnfusedAndCpu) {
  const Ffn& l = GetParam();
  std::string seed = "SWIGLU_FOLD/";
  seed += ffn_name(l);
  Rng rng(case_seed(seed));
  Inputs in{contiguous(GgmlType::F32, {l.k, 1, 1, 1}), contiguous(GgmlType::F32, {l.k, 1, 1, 1}),
            contiguous(GgmlType::F32, {l.k, 1, 1, 1}), contiguous(l.type, {l.k, l.k, 1, 1}),
            contiguous(l.type, {l.k, l.f, 1, 1}),      contiguous(l.type, {l.k, l.f, 1, 1}),
            contiguous(l.type, {l.f, l.k, 1, 1})};
  for (HostTensor* t : {&in.a, &in.res, &in.nw}) fill_normal(*t, rng);
  const double over_k = 1.0 / std::sqrt(static_cast<double>(l.k));
  for (HostTensor* t : {&in.wo, &in.wg, &in.wu}) fill_normal(*t, rng, over_k);
  fill_normal(in.wd, rng, 1.0 / std::sqrt(static_cast<double>(l.f)));
  const FoldRuns r = fold_runs(backend(), [&](const BackendDevice& d) { return run(d, in, l); });
  if (r.fused.empty())
    GTEST_SKIP() << backend().device().name() << " does not support a node of this graph";
  compare(r.again, r.fused, l, 1e-6, 1e-6, "the same graph again");
  compare(r.fused, r.unfused, l, 1e-4, 1e-2, "fusion=0");
  compare(r.fused, r.cpu, l, 1e-2, 5e-2, "cpu");
}

INSTANTIATE_TEST_SUITE_P(
    Rows, SwigluFold,
    ::testing::Values(Ffn{2048, 512, GgmlType::Q4_0}, Ffn{2048, 8192, GgmlType::Q4_0},
                      Ffn{2048, 8192, GgmlType::Q4_K}, Ffn{2048, 8192, GgmlType::Q6_K},
                      Ffn{2048, 512, GgmlType::Q4_K}, Ffn{256, 8224, GgmlType::Q4_0},
                      Ffn{256, 8448, GgmlType::Q4_K}, Ffn{512, 8448, GgmlType::Q6_K}),
    [](const auto& info) { return ffn_name(info.param); });

}  // namespace
}  // namespace polyinfer::conformance
