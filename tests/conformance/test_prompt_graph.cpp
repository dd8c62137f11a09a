// A prompt's nodes of one llama layer over T tokens (more than 8, so that
// products take a backend's GEMM path; 3 to 8, where they take its
// matrix-vector one for several columns, on Vulkan with 8-bit activations
// that the norm and SWIGLU units quantize for all T columns): ADD,
// RMS_NORM, MUL, the Q and K products, ROPE of both (one position per token),
// the roped K and the plain K (standing in for V) into F16 caches, the
// residual ADD, RMS_NORM, MUL, the gate and up products (their weights in one
// buffer, gate's first or up's), SWIGLU and the down product. A backend that
// fuses them runs its prompt units here (CUDA: the norm and SWIGLU also write
// the 16-bit activations of the product after them, ROPE Q and K as one
// launch, the two cache writes as one, gate and up as one batched GEMM with
// either first: tests/unit/test_cuda_fusion.cpp checks the plan). Row lengths
// 256, 2,048, 2,560 and 4,224 reach each of the CUDA row norm's register
// layouts (1, 2, 4 and 8 pieces of four values per thread, the
// last two partly past the row). Every node's output is compared
//   * with the same backend opened with `fusion=0`: the norm sums its squares
//     in another order, so an activation may round to the other neighbouring
//     16-bit value before a product: 1e-5 of the tensor's largest magnitude up
//     to the first products, 1e-3 after them;
//   * with the CPU backend (its own activation rounding): 5e-2 of the largest
//     magnitude, which still catches a misplaced, missing or unwritten
//     (NaN-poisoned) value.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "backend_under_test.hpp"
#include "pi_node_builder.hpp"
#include "polyinfer/fp16.hpp"
#include "random_data.hpp"

namespace polyinfer::conformance {
namespace {

using test_graph::node;

constexpr int64_t kD = 64;  // head size

enum Slot : int {
  kSum,
  kNorm,
  kXn,
  kQ,
  kK,
  kRq,
  kRk,
  kSum2,
  kNorm2,
  kXn2,
  kGate,
  kUp,
  kSw,
  kY,
  kArenaSlots,
  kKc = kArenaSlots,  // the caches, read back as float32 after the arena
  kVc,
  kSlots
};

struct Case {
  GgmlType wtype;
  int64_t embd;  // E: Q's rows; K has E/2
  int64_t ff;    // the feed-forward's rows
  int64_t tokens;
  bool up_first = false;  // up's weights (and output) before gate's
  // K's weights in Q6_K next to Q's Q4_K (as llama.cpp's Q4_K_M puts V):
  // under 9 tokens, CUDA's matrix-vector launch of both types.
  bool k_q6k = false;

  int64_t slot() const { return std::max(embd, ff) * tokens; }  // floats per arena slot
  int64_t rows(int s) const {
    switch (s) {
      case kK:
      case kRk:
      case kKc:
      case kVc:
        return embd / 2;
      case kGate:
      case kUp:
      case kSw:
        return ff;
      default:
        return embd;
    }
  }
};

std::string case_name(const Case& c) {
  std::string name(type_name(c.wtype));
  name += "_e";
  name += std::to_string(c.embd);
  name += "_t";
  name += std::to_string(c.tokens);
  if (c.up_first) name += "_up_first";
  if (c.k_q6k) name += "_k_q6_k";
  return name;
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << case_name(c);
}

struct Inputs {
  HostTensor x, res, pos, wn, wn2, wq, wk, wg, wu, wd;
};

Inputs make_inputs(const Case& c, Rng& rng) {
  const int64_t e = c.embd, f = c.ff, t = c.tokens;
  Inputs in{contiguous(GgmlType::F32, {e, t, 1, 1}),
            contiguous(GgmlType::F32, {e, t, 1, 1}),
            contiguous(GgmlType::I32, {t, 1, 1, 1}),
            contiguous(GgmlType::F32, {e, 1, 1, 1}),
            contiguous(GgmlType::F32, {e, 1, 1, 1}),
            contiguous(c.wtype, {e, e, 1, 1}),
            contiguous(c.k_q6k ? GgmlType::Q6_K : c.wtype, {e, e / 2, 1, 1}),
            contiguous(c.wtype, {e, f, 1, 1}),
            contiguous(c.wtype, {e, f, 1, 1}),
            contiguous(c.wtype, {f, e, 1, 1})};
  for (HostTensor* h : {&in.x, &in.res, &in.wn, &in.wn2}) fill_normal(*h, rng);
  // Weights of sigma 1/sqrt(K), through the reference quantizer for block
  // types, as a model's: the products keep the activations' scale.
  for (HostTensor* h : {&in.wq, &in.wk, &in.wg, &in.wu})
    fill_normal(*h, rng, 1.0 / std::sqrt(static_cast<double>(e)));
  fill_normal(in.wd, rng, 1.0 / std::sqrt(static_cast<double>(f)));
  for (int64_t i = 0; i < t; ++i) in.pos.i32(i) = static_cast<int32_t>(3 + 5 * i);
  return in;
}

pi_node rope(const pi_tensor& x, const pi_tensor& pos, const pi_tensor& dst) {
  return test_graph::llama_rope(x, pos, dst, static_cast<int32_t>(kD));
}

class Runner {
 public:
  Runner(const BackendDevice& dev, const Case& c) : dev_(dev), c_(c) {}

  // Uploads the inputs, poisons the arena, submits the layer's nodes and
  // reads the arena back; empty when a node is not supported.
  std::vector<float> run(const Inputs& in) {
    std::vector<DeviceBuffer> bufs;
    const auto up = [&](const HostTensor& h) {
      bufs.push_back(DeviceBuffer::allocate(dev_, h.bytes.size()));
      bufs.back().write(0, h.bytes.data(), h.bytes.size());
      return bind(h, bufs.back());
    };
    const pi_tensor x = up(in.x), res = up(in.res), pos = up(in.pos), wn = up(in.wn),
                    wn2 = up(in.wn2), wq = up(in.wq), wk = up(in.wk), wd = up(in.wd);
    // Gate and up in one buffer, as a model's weights lie (a backend may run
    // them as one batched product, the second a fixed stride after the first).
    const HostTensor& first = c_.up_first ? in.wu : in.wg;
    const HostTensor& second = c_.up_first ? in.wg : in.wu;
    const uint64_t at_second = (first.bytes.size() + 255) / 256 * 256;
    bufs.push_back(DeviceBuffer::allocate(dev_, at_second + second.bytes.size()));
    bufs.back().write(0, first.bytes.data(), first.bytes.size());
    bufs.back().write(at_second, second.bytes.data(), second.bytes.size());
    pi_tensor w1 = bind(first, bufs.back()), w2 = bind(second, bufs.back());
    w2.offset += at_second;
    const pi_tensor wg = c_.up_first ? w2 : w1, wu = c_.up_first ? w1 : w2;
    const uint64_t slot_bytes = 4 * static_cast<uint64_t>(c_.slot());
    DeviceBuffer arena = DeviceBuffer::allocate(dev_, kArenaSlots * slot_bytes);
    arena_ = arena.handle();
    slot_bytes_ = slot_bytes;
    const int64_t e = c_.embd, t = c_.tokens, kv = e / 2 * t;
    DeviceBuffer cache = DeviceBuffer::allocate(dev_, 4 * static_cast<uint64_t>(kv));
    const pi_tensor kc = test_graph::tensor(test_graph::kF16, cache.handle(), 0,
                                            {kD, e / 2 / kD, t}),
                    vc = test_graph::tensor(test_graph::kF16, cache.handle(), 2 * kv,
                                            {kD, e / 2 / kD, t});
    std::vector<pi_node> g;
    add_norm_mul(g, x, res, kSum, kNorm, kXn, wn);
    g.push_back(node(PI_OP_MUL_MAT, {wq, at(kXn, {e, t})}, at(kQ, {e, t})));
    g.push_back(node(PI_OP_MUL_MAT, {wk, at(kXn, {e, t})}, at(kK, {e / 2, t})));
    g.push_back(rope(at(kQ, {kD, e / kD, t}), pos, at(kRq, {kD, e / kD, t})));
    g.push_back(rope(at(kK, {kD, e / 2 / kD, t}), pos, at(kRk, {kD, e / 2 / kD, t})));
    g.push_back(node(PI_OP_CPY, {at(kRk, {kD, e / 2 / kD, t})}, kc));
    g.push_back(node(PI_OP_CPY, {at(kK, {kD, e / 2 / kD, t})}, vc));
    add_norm_mul(g, at(kRq, {e, t}), at(kSum, {e, t}), kSum2, kNorm2, kXn2, wn2);
    // With up first in memory, its output is first in the arena too.
    const int sg = c_.up_first ? kUp : kGate, su = c_.up_first ? kGate : kUp;
    g.push_back(node(PI_OP_MUL_MAT, {wg, at(kXn2, {e, t})}, at(sg, {c_.ff, t})));
    g.push_back(node(PI_OP_MUL_MAT, {wu, at(kXn2, {e, t})}, at(su, {c_.ff, t})));
    g.push_back(node(PI_OP_SWIGLU, {at(sg, {c_.ff, t}), at(su, {c_.ff, t})}, at(kSw, {c_.ff, t})));
    g.push_back(node(PI_OP_MUL_MAT, {wd, at(kSw, {c_.ff, t})}, at(kY, {e, t})));
    for (const pi_node& n : g) {
      if (!dev_.supports(n)) return {};
    }
    const std::vector<uint8_t> poison(kArenaSlots * slot_bytes, 0xFF);
    arena.write(0, poison.data(), poison.size());
    cache.write(0, poison.data(), 4 * static_cast<uint64_t>(kv));
    dev_.submit(pi_graph{g.data(), static_cast<uint32_t>(g.size())});
    std::vector<float> out(kSlots * c_.slot());
    arena.read(0, out.data(), kArenaSlots * slot_bytes);
    std::vector<uint16_t> halves(2 * kv);
    cache.read(0, halves.data(), 4 * static_cast<uint64_t>(kv));
    for (int m = 0; m < 2; ++m) {
      for (int64_t i = 0; i < kv; ++i)
        out[(kKc + m) * c_.slot() + i] = fp16_to_fp32(halves[m * kv + i]);
    }
    return out;
  }

 private:
  pi_tensor at(int s, std::initializer_list<int64_t> ne) const {
    return test_graph::tensor(0, arena_, static_cast<uint64_t>(s) * slot_bytes_, ne);
  }

  // ADD(a, b) into slot `sum`, RMS_NORM into `norm`, MUL by w into `out`.
  void add_norm_mul(std::vector<pi_node>& g, const pi_tensor& a, const pi_tensor& b, int sum,
                    int norm, int out, const pi_tensor& w) const {
    const int64_t e = c_.embd, t = c_.tokens;
    g.push_back(node(PI_OP_ADD, {a, b}, at(sum, {e, t})));
    g.push_back(node(PI_OP_RMS_NORM, {at(sum, {e, t})}, at(norm, {e, t})));
    g.back().f[0] = 1e-5f;
    g.push_back(node(PI_OP_MUL, {at(norm, {e, t}), w}, at(out, {e, t})));
  }

  const BackendDevice& dev_;
  Case c_;
  pi_buffer arena_ = nullptr;
  uint64_t slot_bytes_ = 0;
};

// got within rel · max|want| of want, slot by slot (NaN fails); `first`: the
// tolerance up to the first products, `later`: after them.
void compare(const std::vector<float>& got, const std::vector<float>& want, const Case& c,
             double first, double later, const std::string& vs) {
  const char* names[kSlots] = {"ADD",       "RMS_NORM",        "MUL",
                               "MUL_MAT Q", "MUL_MAT K",       "ROPE Q",
                               "ROPE K",    "ADD (ffn)",       "RMS_NORM (ffn)",
                               "MUL (ffn)", "MUL_MAT gate/up", "MUL_MAT up/gate",
                               "SWIGLU",    "MUL_MAT down",    "CPY K",
                               "CPY V"};
  for (int s = 0; s < kSlots; ++s) {
    const int64_t n = c.rows(s) * c.tokens;
    const float* g = got.data() + s * c.slot();
    const float* w = want.data() + s * c.slot();
    const double rel = s < kQ ? first : later;
    double peak = 0.0;
    for (int64_t i = 0; i < n; ++i) peak = std::max(peak, std::fabs(double{w[i]}));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!(std::fabs(double{g[i]} - w[i]) <= rel * peak) && bad++ < 3)
        ADD_FAILURE() << vs << ": " << names[s] << "[" << i << "] " << g[i] << ", want " << w[i]
                      << " (tolerance " << rel * peak << ")";
    }
    EXPECT_EQ(bad, 0) << vs << ": " << names[s];
  }
}

class PromptGraph : public ConformanceTestWithParam<Case> {};

TEST_P(PromptGraph, FusedMatchesUnfusedAndCpu) {
  const Case& c = GetParam();
  Rng rng(case_seed("PROMPT_GRAPH/" + case_name(c)));
  const Inputs in = make_inputs(c, rng);
  const BackendDevice& dev = backend().device();
  const std::vector<float> fused = Runner(dev, c).run(in);
  if (fused.empty()) GTEST_SKIP() << dev.name() << " does not support a node of this graph";
  const BackendDevice unfused(dev.vt(), 0, backend().options() + ",fusion=0");
  const BackendDevice cpu(*find_backend("cpu", nullptr), 0, "threads=4");
  const std::vector<float> plain = Runner(unfused, c).run(in), ref = Runner(cpu, c).run(in);
  ASSERT_FALSE(plain.empty()) << dev.name() << " with fusion=0 does not support a node";
  ASSERT_FALSE(ref.empty()) << "the CPU backend does not support a node";
  compare(fused, plain, c, 1e-5, 1e-3, "fusion=0");
  compare(fused, ref, c, 5e-2, 5e-2, "cpu");
}

INSTANTIATE_TEST_SUITE_P(
    Layers, PromptGraph,
    ::testing::Values(Case{GgmlType::F16, 256, 512, 24}, Case{GgmlType::F16, 256, 512, 24, true},
                      Case{GgmlType::BF16, 256, 512, 24}, Case{GgmlType::Q4_0, 256, 512, 40},
                      Case{GgmlType::Q4_K, 256, 768, 17}, Case{GgmlType::F16, 2048, 1024, 12},
                      Case{GgmlType::F16, 2560, 512, 10}, Case{GgmlType::F16, 4224, 512, 9},
                      Case{GgmlType::Q4_0, 256, 512, 3}, Case{GgmlType::Q4_K, 256, 768, 5},
                      Case{GgmlType::Q4_K, 256, 768, 5, false, true},
                      Case{GgmlType::Q4_0, 2048, 1024, 8}),
    [](const auto& info) { return case_name(info.param); });

}  // namespace
}  // namespace polyinfer::conformance
