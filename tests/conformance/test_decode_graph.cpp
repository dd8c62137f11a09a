// One llama decode step's attention and feed-forward nodes as one graph, the
// way a model submits them (ADD, RMS_NORM, MUL, MUL_MAT x3, ROPE x2, CPY x2
// into the KV cache, FLASH_ATTN, MUL_MAT over its heads seen as one column,
// ADD, RMS_NORM, MUL, MUL_MAT gate and up, SWIGLU, MUL_MAT down), then the
// output norm and product (ADD, RMS_NORM, MUL, MUL_MAT), so that a backend
// that fuses consecutive nodes runs its fused units here without a model
// (Vulkan: a product with the ADD, RMS_NORM and MUL after it). ROPE K's
// output lies over Q's bytes, which die at ROPE Q (a layout a backend must
// order: CUDA's ROPE+KV unit then runs as one block), or in a slot of its own,
// as the memory plan puts it (CUDA spreads the unit over a grid). Every node's output (its final
// bytes: later nodes may overwrite an intermediate) is compared
//   * with the same backend opened with `fusion=0` (unfused launches; backends
//     without fusion ignore the key): F16 weights give the same float32 math
//     both ways, so 1e-5 of the tensor's largest magnitude; Q4_0 weights
//     quantize the activations to 8 bits in the fused norm, attention or
//     SWIGLU kernel and in the product's own kernel, where one rounding may land on the
//     other side of a code (1/127 of a block's largest value), so 1e-2 after
//     the first product;
//   * with the CPU backend, loosely (its F16/Q8 activation rounding differs):
//     5e-2 of the largest magnitude, which still catches a misplaced, missing
//     or unwritten (NaN-poisoned) value.
#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "backend_under_test.hpp"
#include "pi_node_builder.hpp"
#include "random_data.hpp"

namespace polyinfer::conformance {
namespace {

constexpr int64_t kEmbd = 256, kD = 64, kHeads = 4, kKvHeads = 2, kKv = kD * kKvHeads;
constexpr uint64_t kSlot = 4 * kEmbd;  // bytes per intermediate in the arena

// Intermediates' slots in the arena; ROPE K writes over Q (slot kQ) or into kRk.
// kSum2, kNorm2, kXn2: the feed-forward's norm; kSum3 .. kOut: the output's;
// kPrev: the product before the layer (Case::after_product).
enum Slot : int {
  kSum,
  kNorm,
  kXn,
  kQ,
  kK,
  kV,
  kRq,
  kO,
  kAo,
  kGate,
  kUp,
  kSw,
  kY,
  kRk,
  kSum2,
  kNorm2,
  kXn2,
  kSum3,
  kNorm3,
  kXn3,
  kOut,
  kPrev,
  kSlots
};

struct Inputs {
  HostTensor x, res, wn, wq, wk, wv, wo, wg, wu, wd, kc, vc, mask, pos, wn2, wn3, wout, ff;
};

// The step's own inputs: a new token's activations and residual, its mask
// over the n_kv positions and its position n_kv - 1. Some earlier positions
// are masked; the new token's own never; with a window, every position but
// the last `window` too (so that each of those weighs much in the output).
void new_token(Inputs& in, int64_t n_kv, Rng& rng, int64_t window = 0) {
  fill_normal(in.x, rng);
  fill_normal(in.res, rng);
  for (int64_t j = 0; j < n_kv; ++j) {
    const bool masked = (j % 7 == 3 || (window > 0 && j < n_kv - window)) && j + 1 < n_kv;
    in.mask.f32(j) = masked ? -INFINITY : 0.0f;
  }
  in.pos.i32(0) = static_cast<int32_t>(n_kv - 1);
}

// Weights (V's of vtype), a KV cache of max_kv positions in ctype, then the
// token at n_kv.
Inputs make_inputs(GgmlType wtype, GgmlType vtype, GgmlType ctype, int64_t n_kv, int64_t max_kv,
                   Rng& rng) {
  Inputs in{
      contiguous(GgmlType::F32, {kEmbd, 1, 1, 1}),  contiguous(GgmlType::F32, {kEmbd, 1, 1, 1}),
      contiguous(GgmlType::F32, {kEmbd, 1, 1, 1}),  contiguous(wtype, {kEmbd, kEmbd, 1, 1}),
      contiguous(wtype, {kEmbd, kKv, 1, 1}),        contiguous(vtype, {kEmbd, kKv, 1, 1}),
      contiguous(wtype, {kEmbd, kEmbd, 1, 1}),      contiguous(wtype, {kEmbd, kEmbd, 1, 1}),
      contiguous(wtype, {kEmbd, kEmbd, 1, 1}),      contiguous(wtype, {kEmbd, kEmbd, 1, 1}),
      contiguous(ctype, {kD, kKvHeads, max_kv, 1}), contiguous(ctype, {kD, kKvHeads, max_kv, 1}),
      contiguous(GgmlType::F32, {max_kv, 1, 1, 1}), contiguous(GgmlType::I32, {1, 1, 1, 1}),
      contiguous(GgmlType::F32, {kEmbd, 1, 1, 1}),  contiguous(GgmlType::F32, {kEmbd, 1, 1, 1}),
      contiguous(wtype, {kEmbd, kEmbd, 1, 1}),      contiguous(GgmlType::F32, {kD / 2, 1, 1, 1})};
  for (HostTensor* t : {&in.wn, &in.kc, &in.vc, &in.wn2, &in.wn3}) fill_normal(*t, rng);
  // Weights of sigma 1/sqrt(K) through the reference quantizer, as a model's:
  // the chain of five products keeps its scale (unit-sigma F16 weights
  // overflowed the CPU's F16 activations; random K-quant blocks, whose codes
  // have a large mean, grew the values to 1e10 and the CPU comparison's
  // rounding differences with them).
  for (HostTensor* t : {&in.wq, &in.wk, &in.wv, &in.wo, &in.wg, &in.wu, &in.wd, &in.wout})
    fill_normal(*t, rng, 1.0 / std::sqrt(static_cast<double>(kEmbd)));
  new_token(in, n_kv, rng);
  // Freq factors as llama 3's rope_freqs: one positive divisor per pair.
  fill_normal(in.ff, rng, 0.5, 3.0);
  return in;
}

pi_tensor f32_at(const DeviceBuffer& arena, int slot, std::initializer_list<int64_t> ne) {
  pi_tensor t{};
  t.type = 0;
  std::fill(t.ne, t.ne + 4, 1);
  std::copy(ne.begin(), ne.end(), t.ne);
  t.nb[0] = 4;
  for (int d = 1; d < 4; ++d) t.nb[d] = t.nb[d - 1] * static_cast<uint64_t>(t.ne[d - 1]);
  t.buffer = arena.handle();
  t.offset = static_cast<uint64_t>(slot) * kSlot;
  return t;
}

using test_graph::node;

// ROPE of llama's heads; with freq factors `ff` (a null buffer: none).
pi_node rope(const pi_tensor& x, const pi_tensor& pos, const pi_tensor& dst, const pi_tensor& ff) {
  pi_node n = test_graph::llama_rope(x, pos, dst, static_cast<int32_t>(kD));
  n.src[2] = ff;
  return n;
}

// What a run leaves: the arena's slots and the KV cache rows of the new token.
struct Result {
  std::vector<float> arena;
  std::vector<float> k_new, v_new;
};

DeviceBuffer upload(const BackendDevice& dev, const HostTensor& h) {
  DeviceBuffer b = DeviceBuffer::allocate(dev, h.bytes.size());
  b.write(0, h.bytes.data(), h.bytes.size());
  return b;
}

// A decode layer on one device: its buffers live across steps, as a model's
// weights, cache and arena do, so that consecutive steps reach the backend as
// the same graph at the next position (a backend may replay it with the
// per-token values changed).
class Layer {
 public:
  Layer(const BackendDevice& dev, const Inputs& in, bool rk_apart, bool freqs, bool norm_x,
        bool after_product)
      : rk_apart_(rk_apart),
        freqs_(freqs),
        norm_x_(norm_x),
        after_product_(after_product),
        dev_(dev),
        x_(upload(dev, in.x)),
        res_(upload(dev, in.res)),
        wn_(upload(dev, in.wn)),
        wq_(upload(dev, in.wq)),
        wk_(upload(dev, in.wk)),
        wv_(upload(dev, in.wv)),
        wo_(upload(dev, in.wo)),
        wg_(upload(dev, in.wg)),
        wu_(upload(dev, in.wu)),
        wd_(upload(dev, in.wd)),
        kc_(upload(dev, in.kc)),
        vc_(upload(dev, in.vc)),
        mask_(upload(dev, in.mask)),
        pos_(upload(dev, in.pos)),
        wn2_(upload(dev, in.wn2)),
        wn3_(upload(dev, in.wn3)),
        wout_(upload(dev, in.wout)),
        ff_(upload(dev, in.ff)),
        arena_(DeviceBuffer::allocate(dev, kSlots * kSlot)) {}

  // Writes the token's inputs, poisons the arena, submits the step at n_kv
  // and reads back what it wrote; the name of a node the device does not
  // support, and no result, if any. With `ahead`, as a model runs decode
  // steps (docs/RUNTIME.md): this step's graph is submitted through
  // graph_submit_prepared where the last step prepared it (abi.h), and the
  // next step's graph is prepared after this one is submitted, before its
  // outputs are read (a backend without graph_prepare submits as usual).
  Result step(const Inputs& in, int64_t n_kv, std::string* unsupported, bool ahead = false) const {
    const std::vector<pi_node> g = graph(in, n_kv);
    for (const pi_node& n : g) {
      if (!dev_.supports(n)) {
        *unsupported = pi_op_name(n.op);
        return {};
      }
    }
    for (const auto& [h, b] :
         {std::pair{&in.x, &x_}, {&in.res, &res_}, {&in.mask, &mask_}, {&in.pos, &pos_}}) {
      b->write(0, h->bytes.data(), h->bytes.size());
    }
    const std::vector<uint8_t> poison(kSlots * kSlot, 0xFF);
    arena_.write(0, poison.data(), poison.size());
    if (ahead && prepared_n_kv_ == n_kv) {
      dev_.submit_prepared();
    } else {
      dev_.submit(pi_graph{g.data(), static_cast<uint32_t>(g.size())});
    }
    if (ahead) {
      next_ = graph(in, n_kv + 1);
      const bool took = dev_.prepare(pi_graph{next_.data(), static_cast<uint32_t>(next_.size())});
      prepared_n_kv_ = took ? n_kv + 1 : -1;
    }
    Result r;
    r.arena.resize(kSlots * kEmbd);
    arena_.read(0, r.arena.data(), kSlots * kSlot);
    r.k_new = cache_row(in.kc, kc_, n_kv - 1);
    r.v_new = cache_row(in.vc, vc_, n_kv - 1);
    return r;
  }

 private:
  // The cache's rows at position pos (every KV head), decoded from its type.
  static std::vector<float> cache_row(const HostTensor& cache, const DeviceBuffer& b, int64_t pos) {
    HostTensor c = cache;
    const uint64_t at = cache.offset + static_cast<uint64_t>(pos) * cache.nb[2];
    b.read(at, c.bytes.data() + at, cache.nb[2]);
    std::vector<float> f;
    for (int64_t h = 0; h < kKvHeads; ++h) {
      for (double v : c.row_values(h, pos)) f.push_back(static_cast<float>(v));
    }
    return f;
  }

  // The cache as FLASH_ATTN reads it: [D, n_kv, Hkv], nb[3] following n_kv
  // as a model's view does.
  static pi_tensor kv_view(const HostTensor& c, const DeviceBuffer& b, int64_t n_kv) {
    pi_tensor t = bind(c, b);
    t.ne[1] = n_kv;
    t.ne[2] = kKvHeads;
    t.nb[1] = c.nb[2];
    t.nb[2] = c.nb[1];
    t.nb[3] = c.nb[2] * static_cast<uint64_t>(n_kv);
    return t;
  }

  std::vector<pi_node> graph(const Inputs& in, int64_t n_kv) const {
    const DeviceBuffer& arena = arena_;
    const pi_tensor pos_t = bind(in.pos, pos_);
    pi_tensor k_slot = bind(in.kc, kc_), v_slot = bind(in.vc, vc_);
    for (pi_tensor* t : {&k_slot, &v_slot}) {
      t->ne[2] = 1;
      t->offset += static_cast<uint64_t>(n_kv - 1) * t->nb[2];
      t->nb[3] = t->nb[2];
    }
    pi_tensor mask = bind(in.mask, mask_);
    mask.ne[0] = n_kv;
    for (int d = 1; d < 4; ++d) mask.nb[d] = 4 * static_cast<uint64_t>(n_kv);
    pi_tensor q_fa = f32_at(arena, kRq, {kD, 1, kHeads, 1});
    q_fa.nb[1] = 4 * kEmbd;
    q_fa.nb[2] = 4 * kD;
    std::vector<pi_node> g;
    pi_tensor added = bind(in.x, x_);
    if (after_product_) {  // the previous layer's down projection, its weights wd's
      g.push_back(node(PI_OP_MUL_MAT, {bind(in.wd, wd_), added}, f32_at(arena, kPrev, {kEmbd})));
      added = f32_at(arena, kPrev, {kEmbd});
    }
    g.push_back(node(PI_OP_ADD, {added, bind(in.res, res_)}, f32_at(arena, kSum, {kEmbd})));
    const pi_tensor normed = norm_x_ ? bind(in.x, x_) : f32_at(arena, kSum, {kEmbd});
    g.push_back(node(PI_OP_RMS_NORM, {normed}, f32_at(arena, kNorm, {kEmbd})));
    g.back().f[0] = 1e-5f;
    g.push_back(node(PI_OP_MUL, {f32_at(arena, kNorm, {kEmbd}), bind(in.wn, wn_)},
                     f32_at(arena, kXn, {kEmbd})));
    const pi_tensor xn = f32_at(arena, kXn, {kEmbd});
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wq, wq_), xn}, f32_at(arena, kQ, {kEmbd})));
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wk, wk_), xn}, f32_at(arena, kK, {kKv})));
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wv, wv_), xn}, f32_at(arena, kV, {kKv})));
    const pi_tensor ff = freqs_ ? bind(in.ff, ff_) : pi_tensor{};
    g.push_back(rope(f32_at(arena, kQ, {kD, kHeads}), pos_t, f32_at(arena, kRq, {kD, kHeads}), ff));
    const int rk = rk_apart_ ? kRk : kQ;
    g.push_back(
        rope(f32_at(arena, kK, {kD, kKvHeads}), pos_t, f32_at(arena, rk, {kD, kKvHeads}), ff));
    g.push_back(node(PI_OP_CPY, {f32_at(arena, rk, {kD, kKvHeads})}, k_slot));
    g.push_back(node(PI_OP_CPY, {f32_at(arena, kV, {kD, kKvHeads})}, v_slot));
    g.push_back(node(PI_OP_FLASH_ATTN,
                     {q_fa, kv_view(in.kc, kc_, n_kv), kv_view(in.vc, vc_, n_kv), mask},
                     f32_at(arena, kO, {kD, kHeads})));
    g.back().f[0] = 1.0f / std::sqrt(static_cast<float>(kD));
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wo, wo_), f32_at(arena, kO, {kEmbd})},
                     f32_at(arena, kAo, {kEmbd})));
    add_norm_mul(g, kAo, kSum, kSum2, kNorm2, kXn2, bind(in.wn2, wn2_));
    const pi_tensor xn2 = f32_at(arena, kXn2, {kEmbd});
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wg, wg_), xn2}, f32_at(arena, kGate, {kEmbd})));
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wu, wu_), xn2}, f32_at(arena, kUp, {kEmbd})));
    g.push_back(node(PI_OP_SWIGLU, {f32_at(arena, kGate, {kEmbd}), f32_at(arena, kUp, {kEmbd})},
                     f32_at(arena, kSw, {kEmbd})));
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wd, wd_), f32_at(arena, kSw, {kEmbd})},
                     f32_at(arena, kY, {kEmbd})));
    add_norm_mul(g, kY, kSum2, kSum3, kNorm3, kXn3, bind(in.wn3, wn3_));
    g.push_back(node(PI_OP_MUL_MAT, {bind(in.wout, wout_), f32_at(arena, kXn3, {kEmbd})},
                     f32_at(arena, kOut, {kEmbd})));
    return g;
  }

  // ADD(slot x, residual slot r) into `sum`, RMS_NORM into `norm`, MUL by the
  // weight row into `out`.
  void add_norm_mul(std::vector<pi_node>& g, int x, int r, int sum, int norm, int out,
                    const pi_tensor& w) const {
    g.push_back(node(PI_OP_ADD, {f32_at(arena_, x, {kEmbd}), f32_at(arena_, r, {kEmbd})},
                     f32_at(arena_, sum, {kEmbd})));
    g.push_back(
        node(PI_OP_RMS_NORM, {f32_at(arena_, sum, {kEmbd})}, f32_at(arena_, norm, {kEmbd})));
    g.back().f[0] = 1e-5f;
    g.push_back(node(PI_OP_MUL, {f32_at(arena_, norm, {kEmbd}), w}, f32_at(arena_, out, {kEmbd})));
  }

  bool rk_apart_;       // ROPE K's output in slot kRk, not over Q
  bool freqs_;          // ROPE with freq factors
  bool norm_x_;         // the attention norm reads the input x, not the ADD's sum
  bool after_product_;  // the ADD reads a product of the input, not the input
  const BackendDevice& dev_;
  mutable std::vector<pi_node> next_;   // the graph prepared for the next step
  mutable int64_t prepared_n_kv_ = -1;  // its n_kv, -1 when none
  DeviceBuffer x_, res_, wn_, wq_, wk_, wv_, wo_, wg_, wu_, wd_, kc_, vc_, mask_, pos_, wn2_, wn3_,
      wout_, ff_, arena_;
};

// got within rel · max|want| of want, element by element (NaN fails).
void expect_close(const float* got, const float* want, int64_t n, double rel,
                  const std::string& what) {
  double peak = 0.0;
  for (int64_t i = 0; i < n; ++i) peak = std::max(peak, std::fabs(double{want[i]}));
  const double tol = rel * peak;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!(std::fabs(double{got[i]} - want[i]) <= tol) && bad++ < 3) {
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << ", want " << want[i] << " (tolerance "
                    << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0) << what << ": values off";
}

struct Case {
  GgmlType wtype;
  int64_t n_kv;
  bool rk_apart = false;       // ROPE K's output in a slot of its own
  bool freqs = false;          // ROPE with freq factors (llama 3's rope_freqs)
  bool norm_x = false;         // the attention norm reads the input, not the ADD's sum
  bool v_q6k = false;          // V's weights in Q6_K, as llama.cpp's Q4_K_M has in some layers
  bool after_product = false;  // the attention's ADD reads a product's output (kPrev)
  bool q8_cache = false;       // the KV cache in Q8_0 (--cache-type q8_0), not F16
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << type_name(c.wtype) << "/n_kv" << c.n_kv << (c.rk_apart ? "/rope_k_apart" : "")
      << (c.freqs ? "/freq_factors" : "") << (c.norm_x ? "/norm_of_input" : "")
      << (c.v_q6k ? "/v_q6_k" : "") << (c.after_product ? "/after_product" : "")
      << (c.q8_cache ? "/q8_0_cache" : "");
}

// Each compared output, its slot (or the cache rows), and whether it comes
// after the first product (8-bit activations with Q4_0 weights).
void compare(const Result& got, const Result& want, bool quantized, bool rk_apart, bool after,
             double loose, const std::string& vs) {
  const char* names[kSlots] = {"ADD",
                               "RMS_NORM",
                               "MUL",
                               rk_apart ? "MUL_MAT Q" : "ROPE K over MUL_MAT Q",
                               "MUL_MAT K",
                               "MUL_MAT V",
                               "ROPE Q",
                               "FLASH_ATTN",
                               "MUL_MAT O",
                               "MUL_MAT gate",
                               "MUL_MAT up",
                               "SWIGLU",
                               "MUL_MAT down",
                               "ROPE K",
                               "ADD (feed-forward)",
                               "RMS_NORM (feed-forward)",
                               "MUL (feed-forward)",
                               "ADD (output)",
                               "RMS_NORM (output)",
                               "MUL (output)",
                               "MUL_MAT output",
                               "MUL_MAT before the layer"};
  int64_t len[kSlots];
  std::fill(len, len + kSlots, kEmbd);
  len[kQ] = rk_apart ? kEmbd : kKv;
  len[kK] = len[kV] = len[kRk] = kKv;
  for (int s = 0; s < kSlots; ++s) {
    if ((s == kRk && !rk_apart) || (s == kPrev && !after)) continue;  // never written
    // With a product before the layer, every output follows one.
    const double rel = loose > 0 ? loose : ((s >= kQ || after) && quantized ? 1e-2 : 1e-5);
    expect_close(got.arena.data() + s * kEmbd, want.arena.data() + s * kEmbd, len[s], rel,
                 vs + ": " + names[s]);
  }
  const double rel = loose > 0 ? loose : (quantized ? 1e-2 : 1e-5);
  expect_close(got.k_new.data(), want.k_new.data(), kKv, rel, vs + ": CPY K");
  expect_close(got.v_new.data(), want.v_new.data(), kKv, rel, vs + ": CPY V");
}

GgmlType cache_type(bool q8) {
  return q8 ? GgmlType::Q8_0 : GgmlType::F16;
}

class DecodeGraph : public ConformanceTestWithParam<Case> {};

TEST_P(DecodeGraph, FusedMatchesUnfusedAndCpu) {
  const auto [wtype, n_kv, rk_apart, freqs, norm_x, v_q6k, after, q8_cache] = GetParam();
  Rng rng(case_seed("DECODE_GRAPH/" + std::string(type_name(wtype)) + "/" + std::to_string(n_kv)));
  const Inputs in =
      make_inputs(wtype, v_q6k ? GgmlType::Q6_K : wtype, cache_type(q8_cache), n_kv, n_kv, rng);
  const BackendDevice& dev = backend().device();
  const BackendDevice unfused(dev.vt(), 0, backend().options() + ",fusion=0");
  const BackendDevice cpu(*find_backend("cpu", nullptr), 0, "threads=4");
  std::string unsupported;
  const Result fused = Layer(dev, in, rk_apart, freqs, norm_x, after).step(in, n_kv, &unsupported);
  if (!unsupported.empty()) GTEST_SKIP() << dev.name() << " does not support this " << unsupported;
  const bool quantized = wtype != GgmlType::F16;
  compare(fused, Layer(unfused, in, rk_apart, freqs, norm_x, after).step(in, n_kv, &unsupported),
          quantized, rk_apart, after, 0.0, "fusion=0");
  compare(fused, Layer(cpu, in, rk_apart, freqs, norm_x, after).step(in, n_kv, &unsupported),
          quantized, rk_apart, after, 5e-2, "cpu");
}

// Consecutive decode steps on the same buffers, a new token each (its
// activations, mask and position; the cache row it writes is read by the
// steps after it): the graph differs only in the KV length and the cache
// rows written, which a backend may keep out of what it compiles (CUDA
// replays one captured graph with those values in device memory; the first
// steps run eagerly, then captured). Each token attends to its last 4
// positions only (the mask), so that a stale KV length or cache row moves
// the attention's output by a quarter or more. Every step against the same
// backend with fusion=0 (as above) and the CPU: 1e-1 of the largest
// magnitude, since the cache rows each backend wrote at the earlier steps
// carry its own rounding into the later ones. And against the same backend
// on a stream of its own where each step's graph is prepared while the step
// before runs (graph_prepare, abi.h; CUDA plans it for a stream the host has
// synchronized by the launch), as the runtime runs decode steps.
TEST_P(DecodeGraph, ConsecutiveStepsMatchUnfusedAndCpu) {
  constexpr int kSteps = 5;
  constexpr int64_t kWindow = 4;
  const auto [wtype, n_kv0, rk_apart, freqs, norm_x, v_q6k, after, q8_cache] = GetParam();
  Rng rng(case_seed("DECODE_STEPS/" + std::string(type_name(wtype)) + "/" + std::to_string(n_kv0)));
  Inputs in = make_inputs(wtype, v_q6k ? GgmlType::Q6_K : wtype, cache_type(q8_cache), n_kv0,
                          n_kv0 + kSteps - 1, rng);
  const BackendDevice& dev = backend().device();
  const BackendDevice unfused(dev.vt(), 0, backend().options() + ",fusion=0");
  const BackendDevice cpu(*find_backend("cpu", nullptr), 0, "threads=4");
  // A stream of its own: a submit on fused_layer's would drop what it prepared.
  const BackendDevice ahead(dev.vt(), 0, backend().options());
  const Layer fused_layer(dev, in, rk_apart, freqs, norm_x, after),
      unfused_layer(unfused, in, rk_apart, freqs, norm_x, after),
      cpu_layer(cpu, in, rk_apart, freqs, norm_x, after),
      ahead_layer(ahead, in, rk_apart, freqs, norm_x, after);
  const bool quantized = wtype != GgmlType::F16;
  for (int64_t n_kv = n_kv0; n_kv < n_kv0 + kSteps; ++n_kv) {
    new_token(in, n_kv, rng, kWindow);
    std::string unsupported;
    const Result fused = fused_layer.step(in, n_kv, &unsupported);
    if (!unsupported.empty())
      GTEST_SKIP() << dev.name() << " does not support this " << unsupported;
    const std::string at = "n_kv " + std::to_string(n_kv) + ", ";
    compare(fused, unfused_layer.step(in, n_kv, &unsupported), quantized, rk_apart, after, 0.0,
            at + "fusion=0");
    compare(fused, cpu_layer.step(in, n_kv, &unsupported), quantized, rk_apart, after, 1e-1,
            at + "cpu");
    compare(fused, ahead_layer.step(in, n_kv, &unsupported, true), quantized, rk_apart, after, 0.0,
            at + "prepared ahead");
  }
}

// n_kv: one block per head, two blocks and a merge, and past the short-KV
// decode kernel (CUDA; there the O projection's activations are quantized after
// the attention's merge, not in its kernel); 254: the steps cross from the
// short kernel to the long one. Q4_K: two weight rows per warp; Q5_K: one row
// per warp, Q4_K's dot with the fifth bits (also under the folded norm,
// norm_of_input); Q8_0: the residual activation codes; rope_k_apart: ROPE K's
// output in a slot of its own, as the memory plan lays out a model (CUDA's
// ROPE+KV unit as a grid; Vulkan: ROPE K and its cache write in the K product's
// epilogue, for Q4_K with a pair's rows in two workgroups); freq_factors: llama
// 3's rope_freqs (there, in the epilogue's src1 slot); norm_of_input: the
// attention norm reads the layer's input, not the ADD's sum, so that CUDA folds
// it into the Q, K and V products (a one-wave grid, a warp per row) as it does
// in a model after the product that adds the residual; v_q6_k: V's rows in Q6_K
// next to Q and K's Q4_K, which CUDA dots in the same launch; after_product: the
// attention's ADD reads a product of the input (the previous layer's down
// projection), so that the Q, K and V products come after a norm that the
// product before it may fold (Vulkan's Unit::norm: where that product reads
// codes, as test_conformance_vulkan_sync's prequant_min_k=0 makes it, Q, K and V
// scale by the norm and fold their ROPE and cache writes); q8_0_cache: the KV
// cache in Q8_0 (weights quantized: a cache row's code may round the other way
// between two backends, at most 1/127 of its block's largest value): each step
// writes its row through a CPY into Q8_0 blocks, and the decode attention reads
// the blocks (Vulkan: flash_attn_vec.comp's Q8_0 pieces and split).
INSTANTIATE_TEST_SUITE_P(
    Steps, DecodeGraph,
    ::testing::Values(Case{GgmlType::F16, 40}, Case{GgmlType::Q4_0, 40}, Case{GgmlType::Q4_0, 100},
                      Case{GgmlType::F16, 300}, Case{GgmlType::Q4_0, 254},
                      Case{GgmlType::Q4_0, 300}, Case{GgmlType::Q4_K, 40}, Case{GgmlType::Q8_0, 40},
                      Case{GgmlType::Q5_K, 40}, Case{GgmlType::Q5_K, 40, true, false, true},
                      Case{GgmlType::F16, 40, true}, Case{GgmlType::Q4_0, 254, true},
                      Case{GgmlType::Q4_0, 40, true, true}, Case{GgmlType::Q4_K, 40, true},
                      Case{GgmlType::Q4_K, 40, true, true},
                      Case{GgmlType::Q4_K, 40, true, false, true},
                      Case{GgmlType::Q4_K, 40, true, false, true, true},
                      Case{GgmlType::Q4_K, 254, true, true, false, true},
                      Case{GgmlType::Q4_0, 254, true, true, true},
                      Case{GgmlType::Q4_0, 40, true, false, false, false, true},
                      Case{GgmlType::Q4_0, 254, false, true, false, false, true},
                      Case{.wtype = GgmlType::Q4_0, .n_kv = 40, .q8_cache = true},
                      Case{.wtype = GgmlType::Q4_K,
                           .n_kv = 254,
                           .rk_apart = true,
                           .freqs = true,
                           .v_q6k = true,
                           .q8_cache = true},
                      Case{.wtype = GgmlType::Q4_0,
                           .n_kv = 254,
                           .rk_apart = true,
                           .freqs = true,
                           .after_product = true,
                           .q8_cache = true}));

}  // namespace
}  // namespace polyinfer::conformance
