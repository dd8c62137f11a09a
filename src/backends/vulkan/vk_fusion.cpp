#include "backends/vulkan/vk_fusion.hpp"

#include <cstring>

#include "backends/fusion_bytes.hpp"
#include "backends/vulkan/vk_matvec_plan.hpp"

namespace polyinfer::vk {
namespace {

constexpr uint32_t kF32 = 0;

using fusion::independent;
using fusion::overlap;
using fusion::same_tensor;

bool same_shape(const pi_tensor& a, const pi_tensor& b) {
  return std::memcmp(a.ne, b.ne, sizeof a.ne) == 0;
}

// Float32 rows whose every element is a whole word of its buffer: the fused
// norm stores words, with no sub-word path.
bool f32_words(const pi_tensor& t) {
  return t.type == kF32 && t.nb[0] == 4 && t.offset % 4 == 0 && t.nb[1] % 4 == 0 &&
         t.nb[2] % 4 == 0 && t.nb[3] % 4 == 0;
}

// A float32 vector of k values that MUL broadcasts over every row.
bool row_vector(const pi_tensor& w, int64_t k) {
  return f32_words(w) && w.ne[0] == k && w.ne[1] == 1 && w.ne[2] == 1 && w.ne[3] == 1;
}

// No output shares bytes with another output or with an input: the dispatch
// reads its inputs and writes its outputs in one pass, each workgroup its own
// rows, so any such overlap would depend on the order of the workgroups.
bool disjoint(std::initializer_list<const pi_tensor*> outs,
              std::initializer_list<const pi_tensor*> ins) {
  for (auto o = outs.begin(); o != outs.end(); ++o) {
    for (auto p = o + 1; p != outs.end(); ++p)
      if (overlap(**o, **p)) return false;
    for (const pi_tensor* in : ins)
      if (overlap(**o, *in)) return false;
  }
  return true;
}

// RMS_NORM at i and MUL(norm, w) at i + 1, with the norm's own checks.
bool norm_mul_shapes(const pi_graph& g, uint32_t i) {
  if (i + 1 >= g.n_nodes) return false;
  const pi_node &n = g.nodes[i], &m = g.nodes[i + 1];
  if (n.op != PI_OP_RMS_NORM || m.op != PI_OP_MUL || n.dst.ne[0] > kMaxFusedNormRow) return false;
  return f32_words(n.src[0]) && f32_words(n.dst) && same_shape(n.src[0], n.dst) &&
         same_tensor(m.src[0], n.dst) && row_vector(m.src[1], n.dst.ne[0]) && f32_words(m.dst) &&
         same_shape(m.dst, n.dst);
}

bool norm_mul_at(const pi_graph& g, uint32_t i) {
  if (!norm_mul_shapes(g, i)) return false;
  const pi_node &n = g.nodes[i], &m = g.nodes[i + 1];
  return disjoint({&n.dst, &m.dst}, {&n.src[0], &m.src[1]});
}

// ADD(a, b) at i (no broadcast) whose sum RMS_NORM at i + 1 reads.
bool add_norm_mul_at(const pi_graph& g, uint32_t i) {
  if (!norm_mul_shapes(g, i + 1)) return false;
  const pi_node &a = g.nodes[i], &n = g.nodes[i + 1], &m = g.nodes[i + 2];
  return a.op == PI_OP_ADD && f32_words(a.src[0]) && f32_words(a.src[1]) && f32_words(a.dst) &&
         same_shape(a.src[0], a.dst) && same_shape(a.src[1], a.dst) &&
         same_tensor(n.src[0], a.dst) &&
         disjoint({&a.dst, &n.dst, &m.dst}, {&a.src[0], &a.src[1], &m.src[1]});
}

Unit unit_at(const pi_graph& g, uint32_t i) {
  if (add_norm_mul_at(g, i)) return {i, 3, UnitKind::kAddNormMul};
  if (norm_mul_at(g, i)) return {i, 2, UnitKind::kNormMul};
  return {i, 1, UnitKind::kSingle};
}

// Consecutive products over the same activations share one quantization: the
// codes stay valid while no product of the run writes over the activations
// (which it could only do to a later product's input, as `independent` checks).
class QuantizeRuns {
 public:
  explicit QuantizeRuns(const pi_graph& g) : g_(g) {}
  // Whether node i (a product reading codes) needs its own quantization.
  bool starts_run(uint32_t i) {
    bool joins = run_first_ < i;
    for (uint32_t j = run_first_; joins && j < i; ++j) {
      joins = same_tensor(g_.nodes[j].src[1], g_.nodes[i].src[1]) &&
              independent(g_.nodes[j], g_.nodes[i]);
    }
    if (!joins) run_first_ = i;
    return !joins;
  }
  // A unit that is not such a product ends the run.
  void end(uint32_t next) { run_first_ = next; }

 private:
  const pi_graph& g_;
  uint32_t run_first_ = 0;
};

}  // namespace

std::vector<Unit> plan_units(const pi_graph& g, const Features& features) {
  std::vector<Unit> units;
  units.reserve(g.n_nodes);
  QuantizeRuns runs(g);
  for (uint32_t i = 0; i < g.n_nodes;) {
    Unit u = features.fusion ? unit_at(g, i) : Unit{i, 1, UnitKind::kSingle};
    const pi_node& n = g.nodes[i];
    if (u.kind == UnitKind::kSingle && matvec_prequant(n, features)) {
      u.quantize = runs.starts_run(i);
    } else {
      runs.end(i + u.count);
    }
    units.push_back(u);
    i += u.count;
  }
  return units;
}

}  // namespace polyinfer::vk
