#include "backends/vulkan/vk_fusion.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <utility>
#include <vector>

#include "backends/fusion_bytes.hpp"
#include "backends/vulkan/vk_matvec_plan.hpp"

namespace polyinfer::vk {
namespace {

constexpr uint32_t kF32 = 0, kF16 = 1, kBF16 = 30;

using fusion::byte_end;
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

// A KV cache the fused ROPE writes: F32 rows in whole words, or F16/BF16
// rows in whole halfwords (shaders/rope.comp stores them so).
bool cache_rows(const pi_tensor& t) {
  const uint64_t size = t.type == kF32 ? 4 : (t.type == kF16 || t.type == kBF16) ? 2 : 0;
  if (size == 0 || t.nb[0] != size || t.offset % size != 0) return false;
  for (int d = 1; d < 4; ++d)
    if (t.nb[d] % size != 0) return false;
  return true;
}

// ROPE at i and the CPY of exactly its output into a float KV cache at i + 1
// (llama's K: one barrier less per layer, the CPY no longer waiting for the
// ROPE), neither output over an input.
bool rope_cpy_at(const pi_graph& g, uint32_t i) {
  if (i + 1 >= g.n_nodes) return false;
  const pi_node &r = g.nodes[i], &c = g.nodes[i + 1];
  return r.op == PI_OP_ROPE && c.op == PI_OP_CPY && same_tensor(c.src[0], r.dst) &&
         same_shape(c.dst, r.dst) && cache_rows(c.dst) &&
         disjoint({&r.dst, &c.dst}, {&r.src[0], &r.src[1], &r.src[2]});
}

// SWIGLU at i whose output node i + 1, a MUL_MAT with 8-bit activations,
// reads: F32 rows in whole words of whole 32-value blocks, the output apart
// from the inputs (each workgroup reads and writes its values in one pass).
bool swiglu_quant_at(const pi_graph& g, uint32_t i, const Features& features) {
  if (i + 1 >= g.n_nodes) return false;
  const pi_node &s = g.nodes[i], &m = g.nodes[i + 1];
  if (s.op != PI_OP_SWIGLU || m.op != PI_OP_MUL_MAT || !matvec_prequant(m, features)) return false;
  return same_tensor(m.src[1], s.dst) && s.dst.ne[0] % 32 == 0 && f32_words(s.src[0]) &&
         f32_words(s.src[1]) && f32_words(s.dst) && same_shape(s.src[0], s.dst) &&
         same_shape(s.src[1], s.dst) && disjoint({&s.dst}, {&s.src[0], &s.src[1]});
}

// A norm unit (kNormMul, kAddNormMul) whose MUL output the next node, a
// MUL_MAT with 8-bit activations, reads: the norm dispatch quantizes that
// output itself (shaders/norm.comp CODES), whatever the rows' length, since
// it costs no dispatch and no barrier of its own.
bool norm_codes_at(const pi_graph& g, const Unit& u, const Features& features) {
  if (!features.prequant || (u.kind != UnitKind::kNormMul && u.kind != UnitKind::kAddNormMul))
    return false;
  const uint32_t next = u.first + u.count;
  if (next >= g.n_nodes) return false;
  const pi_node &mul = g.nodes[next - 1], &m = g.nodes[next];
  // The shader's shared memory: the row (and a pad per 32 values), the sums.
  const uint32_t wg = fused_norm_workgroup(mul.dst.ne[0], features);
  const uint64_t values = uint64_t{wg} * fused_norm_values(mul.dst.ne[0], wg);
  const uint64_t shared = 4 * (values + values / 32) + 4 * uint64_t{wg};
  return m.op == PI_OP_MUL_MAT && matvec_int_dot(m, features) && same_tensor(m.src[1], mul.dst) &&
         mul.dst.ne[0] % 32 == 0 && shared <= features.max_shared;
}

// FLASH_ATTN at i whose output the next node, a MUL_MAT with 8-bit
// activations, reads as rows of H x D values (the heads side by side: llama's
// O projection): the attention dispatch writes the product's codes
// (shaders/flash_attn.comp USE_CODES), a block of 32 values never straddling
// two heads.
bool attn_codes_at(const pi_graph& g, uint32_t i, const Features& features) {
  if (!features.prequant || i + 1 >= g.n_nodes) return false;
  const pi_node &a = g.nodes[i], &m = g.nodes[i + 1];
  if (a.op != PI_OP_FLASH_ATTN || m.op != PI_OP_MUL_MAT || !matvec_int_dot(m, features))
    return false;
  const pi_tensor &o = a.dst, &x = m.src[1];  // o: [D, H, T]; x: [D H, T]
  const bool o_rows = o.type == kF32 && o.nb[0] == 4 &&
                      o.nb[1] == 4 * static_cast<uint64_t>(o.ne[0]) &&
                      o.nb[2] == o.nb[1] * static_cast<uint64_t>(o.ne[1]) && o.ne[3] == 1;
  return o_rows && o.ne[0] % 32 == 0 && x.type == kF32 && x.buffer == o.buffer &&
         x.offset == o.offset && x.ne[0] == o.ne[0] * o.ne[1] && x.ne[1] == o.ne[2] &&
         x.ne[2] == 1 && x.ne[3] == 1 && x.nb[0] == 4 && x.nb[1] == o.nb[2];
}

// ---- A product's epilogue (Unit::rope, Unit::cache) ----

// Nodes after a product that its epilogue may take over (llama: ROPE Q is 3
// nodes after the Q product, V's cache write 4 after the V product).
constexpr uint32_t kFoldWindow = 6;

// Whether x is product p's output [N, T] seen as [D, N / D, T]: the same
// bytes, contiguous F32, one batch.
bool over_output(const pi_tensor& x, const pi_node& p) {
  const pi_tensor& o = p.dst;
  return x.type == kF32 && o.type == kF32 && x.buffer == o.buffer && x.offset == o.offset &&
         o.nb[0] == 4 && o.nb[1] == 4 * static_cast<uint64_t>(o.ne[0]) && x.ne[0] > 0 &&
         x.ne[0] * x.ne[1] == o.ne[0] && x.ne[2] == o.ne[1] && x.ne[3] == 1 && o.ne[2] == 1 &&
         o.ne[3] == 1 && x.nb[0] == 4 && x.nb[1] == 4 * static_cast<uint64_t>(x.ne[0]) &&
         x.nb[2] == o.nb[1];
}

// Whether node j may run in the dispatch of product i < j: independent of
// every node between them (but `with`, which moves along), its output apart
// from the product's bytes and from what it reads.
bool movable(const pi_graph& g, uint32_t i, uint32_t j, uint32_t with = 0) {
  const pi_node &p = g.nodes[i], &n = g.nodes[j];
  for (uint32_t k = i + 1; k < j; ++k)
    if (k != with && !independent(g.nodes[k], n)) return false;
  return disjoint({&n.dst}, {&p.src[0], &p.src[1], &p.dst, &n.src[1], &n.src[2]});
}

// The CPY at j of exactly x into a float KV cache (as rope_cpy_at).
bool cache_write_at(const pi_graph& g, uint32_t j, const pi_tensor& x) {
  if (j >= g.n_nodes) return false;
  const pi_node& c = g.nodes[j];
  return c.op == PI_OP_CPY && same_tensor(c.src[0], x) && same_shape(c.dst, x) && cache_rows(c.dst);
}

// A ROPE the epilogue computes: normal mode (a pair is two consecutive
// rows), F32 output in whole words, over product i's output.
bool foldable_rope(const pi_graph& g, uint32_t i, uint32_t j) {
  const pi_node& r = g.nodes[j];
  return r.op == PI_OP_ROPE && r.i[0] == 0 && over_output(r.src[0], g.nodes[i]) &&
         r.src[0].ne[0] % 2 == 0 && f32_words(r.dst) && same_shape(r.dst, r.src[0]) &&
         movable(g, i, j);
}

// Sets u.rope and u.cache for product u.first where later nodes qualify: the
// first ROPE or CPY over its output within kFoldWindow nodes, and for a
// ROPE, the CPY of its output right after it.
void fold_epilogue(const pi_graph& g, Unit& u) {
  const uint32_t i = u.first, end = std::min(g.n_nodes, i + 1 + kFoldWindow);
  for (uint32_t j = i + 1; j < end; ++j) {
    const pi_node& n = g.nodes[j];
    if (n.op == PI_OP_ROPE && over_output(n.src[0], g.nodes[i])) {
      if (!foldable_rope(g, i, j)) return;
      u.rope = j;
      if (cache_write_at(g, j + 1, n.dst) && movable(g, i, j + 1, j) &&
          disjoint({&g.nodes[j + 1].dst}, {&n.dst}))
        u.cache = j + 1;
      return;
    }
    if (cache_write_at(g, j, n.src[0]) && over_output(n.src[0], g.nodes[i])) {
      if (movable(g, i, j)) u.cache = j;
      return;
    }
  }
}

// Product i (in the direct kernel, reading codes, no epilogue) and the ADD at
// i + 1 over its output and a residual, RMS_NORM and MUL after it
// (add_norm_mul_at), whose output the product at i + 4 reads as codes
// (Unit::norm): the residual and the norm's weight apart from the product's
// output, which other workgroups store while a block's last one reads them;
// the ADD's, RMS_NORM's and MUL's outputs apart from the product's bytes.
bool norm_foldable(const pi_graph& g, uint32_t i, const Features& features) {
  const uint32_t j = i + 1;
  if (j + 3 >= g.n_nodes || !add_norm_mul_at(g, j)) return false;
  const pi_node &p = g.nodes[i], &a = g.nodes[j], &m = g.nodes[j + 2], &next = g.nodes[j + 3];
  const pi_tensor& residual = add_residual(a, p.dst);
  return matvec_direct_norm(p, features) && f32_words(p.dst) &&
         (same_tensor(a.src[0], p.dst) || same_tensor(a.src[1], p.dst)) &&
         !overlap(residual, p.dst) && !overlap(m.src[1], p.dst) && next.op == PI_OP_MUL_MAT &&
         matvec_int_dot(next, features) && same_tensor(next.src[1], m.dst) &&
         disjoint({&a.dst, &g.nodes[j + 1].dst, &m.dst}, {&p.src[0], &p.src[1], &p.dst});
}

// Product i (gate; in the direct kernel, reading codes, no epilogue) and the
// product at i + 1 alike over the same activations (up), the SWIGLU at i + 2
// over their outputs (gate first), whose output the product at i + 3 reads as
// codes (Unit::swiglu): every output float32 words of whole 32-row blocks, one
// column, apart from each other and from the products' inputs (the
// dispatch's workgroups read the others' rows while writing their own).
bool swiglu_foldable(const pi_graph& g, uint32_t i, const Features& features) {
  if (i + 3 >= g.n_nodes) return false;
  const pi_node &gate = g.nodes[i], &up = g.nodes[i + 1], &s = g.nodes[i + 2],
                &down = g.nodes[i + 3];
  return up.op == PI_OP_MUL_MAT && matvec_direct(up, true) && matvec_direct_alike(gate, up) &&
         same_tensor(up.src[1], gate.src[1]) && matvec_direct_swiglu(gate, features) &&
         s.op == PI_OP_SWIGLU && same_tensor(s.src[0], gate.dst) && same_tensor(s.src[1], up.dst) &&
         f32_words(gate.dst) && f32_words(up.dst) && f32_words(s.dst) &&
         same_shape(s.dst, gate.dst) && down.op == PI_OP_MUL_MAT &&
         matvec_int_dot(down, features) && same_tensor(down.src[1], s.dst) &&
         disjoint({&gate.dst, &up.dst, &s.dst}, {&gate.src[0], &up.src[0], &gate.src[1]});
}

// The nodes that earlier products fold (at most two each, kFoldWindow
// ahead): a few at a time, so a fixed array.
class Folded {
 public:
  void add(uint32_t j) {
    if (j != 0 && n_ < at_.size()) at_[n_++] = j;
  }
  bool has(uint32_t j) const {
    return std::find(at_.begin(), at_.begin() + n_, j) != at_.begin() + n_;
  }
  // Forgets the nodes before i (the planner has passed them).
  void pass(uint32_t i) {
    n_ = static_cast<uint32_t>(
        std::remove_if(at_.begin(), at_.begin() + n_, [i](uint32_t j) { return j < i; }) -
        at_.begin());
  }
  bool full() const { return n_ + 2 > at_.size(); }

 private:
  std::array<uint32_t, 16> at_{};
  uint32_t n_ = 0;
};

Unit unit_at(const pi_graph& g, uint32_t i) {
  if (add_norm_mul_at(g, i)) return {i, 3, UnitKind::kAddNormMul};
  if (norm_mul_at(g, i)) return {i, 2, UnitKind::kNormMul};
  if (rope_cpy_at(g, i)) return {i, 2, UnitKind::kRopeCpy};
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

// The unit that runs product j: its own, or for an up product folded with
// its gate (Unit::swiglu), the gate's.
const Unit& product_unit(const std::vector<Unit>& units, const std::vector<uint32_t>& unit_of,
                         uint32_t j) {
  const Unit& u = units[unit_of[j]];
  if (u.kind != UnitKind::kFolded || j == 0) return u;
  const Unit& gate = units[unit_of[j - 1]];
  return gate.swiglu == j + 1 ? gate : u;
}

// The bytes of a buffer that still hold a tensor's values, as later nodes
// write over them: intervals [lo, hi).
class LiveBytes {
 public:
  explicit LiveBytes(const pi_tensor& t) : buffer_(t.buffer), runs_{{t.offset, byte_end(t)}} {}

  // Whether t may read any of them.
  bool read_by(const pi_tensor& t) const {
    if (t.buffer == nullptr || t.buffer != buffer_) return false;
    for (const auto& [lo, hi] : runs_)
      if (t.offset < hi && lo < byte_end(t)) return true;
    return false;
  }

  // Drops the bytes a node wrote as w; only a dense float32 w, whose every
  // byte the node writes, counts.
  void written(const pi_tensor& w) {
    const bool dense = w.type == kF32 && w.nb[0] == 4 &&
                       w.nb[1] == 4 * static_cast<uint64_t>(w.ne[0]) &&
                       w.nb[2] == w.nb[1] * static_cast<uint64_t>(w.ne[1]) &&
                       w.nb[3] == w.nb[2] * static_cast<uint64_t>(w.ne[2]);
    if (!dense || w.buffer != buffer_) return;
    const uint64_t a = w.offset, b = byte_end(w);
    std::vector<std::pair<uint64_t, uint64_t>> left;
    for (const auto& [lo, hi] : runs_) {
      if (hi <= a || b <= lo) {
        left.emplace_back(lo, hi);
        continue;
      }
      if (lo < a) left.emplace_back(lo, a);
      if (b < hi) left.emplace_back(b, hi);
    }
    runs_ = std::move(left);
  }

  bool empty() const { return runs_.empty(); }

 private:
  pi_buffer buffer_;
  std::vector<std::pair<uint64_t, uint64_t>> runs_;
};

// Whether the outputs of the RMS_NORM at `norm` and the MUL after it, both
// scratch (PI_NODE_SCRATCH), go unread: no later node reads them but
// products that read the codes of the MUL's output which a product's norm
// blocks made (run by a unit reading codes scaled by this norm,
// Unit::scale_norm). Readers are looked for in the bytes that no later node
// has written over (in a planned graph, other tensors take them).
bool norm_unread(const pi_graph& g, const std::vector<Unit>& units,
                 const std::vector<uint32_t>& unit_of, uint32_t norm) {
  const pi_node &n = g.nodes[norm], &m = g.nodes[norm + 1];
  if ((n.flags & m.flags & PI_NODE_SCRATCH) == 0) return false;
  LiveBytes norm_bytes(n.dst), mul_bytes(m.dst);
  for (uint32_t j = norm + 2; j < g.n_nodes && !(norm_bytes.empty() && mul_bytes.empty()); ++j) {
    const pi_node& r = g.nodes[j];
    const Unit& u = product_unit(units, unit_of, j);
    const bool codes = r.op == PI_OP_MUL_MAT && u.kind == UnitKind::kSingle && u.reads_codes &&
                       !u.quantize && u.scale_norm == norm && same_tensor(r.src[1], m.dst);
    for (uint32_t s = 0; s < std::min<uint32_t>(r.n_src, PI_MAX_SRC); ++s) {
      if (norm_bytes.read_by(r.src[s])) return false;
      if (mul_bytes.read_by(r.src[s]) && !(s == 1 && codes)) return false;
    }
    norm_bytes.written(r.dst);
    mul_bytes.written(r.dst);
  }
  return true;
}

// The norm units beside the products after a folded norm (Unit::norm) whose
// outputs go unread (norm_unread) become kFolded: no dispatch.
void drop_unread_norms(const pi_graph& g, std::vector<Unit>& units) {
  std::vector<uint32_t> unit_of(g.n_nodes);
  for (uint32_t k = 0; k < units.size(); ++k)
    for (uint32_t j = units[k].first; j < units[k].first + units[k].count; ++j) unit_of[j] = k;
  for (const Unit& u : units) {
    if (u.norm == 0) continue;
    Unit& beside = units[unit_of[u.norm + 1]];
    if (beside.first == u.norm + 1 && beside.kind == UnitKind::kNormMul && !beside.writes_codes &&
        norm_unread(g, units, unit_of, u.norm + 1))
      beside.kind = UnitKind::kFolded;
  }
}

}  // namespace

const pi_tensor& add_residual(const pi_node& add, const pi_tensor& x) {
  return same_tensor(add.src[0], x) ? add.src[1] : add.src[0];
}

uint32_t fused_norm_workgroup(int64_t k, const Features& features) {
  return k >= 4096 && features.max_workgroup >= 1024 ? 1024 : 256;
}

uint32_t fused_norm_values(int64_t k, uint32_t wg) {
  const uint64_t per = (static_cast<uint64_t>(std::max<int64_t>(k, 1)) + wg - 1) / wg;
  return static_cast<uint32_t>(std::min<uint64_t>(std::bit_ceil(per), kMaxFusedNormRow / wg));
}

std::vector<Unit> plan_units(const pi_graph& g, const Features& features) {
  std::vector<Unit> units;
  units.reserve(g.n_nodes);
  QuantizeRuns runs(g);
  uint32_t quantized = g.n_nodes;  // the product whose codes a fused unit wrote
  // Their norm, when a product's blocks wrote them (Unit::norm): its unit
  // writes no codes. 0: none.
  uint32_t pending = 0;
  bool run_codes = false;  // whether the current run's products read codes
  uint32_t run_norm = 0;   // the current run's Unit::scale_norm
  Folded folded;
  for (uint32_t i = 0; i < g.n_nodes;) {
    folded.pass(i);
    if (folded.has(i)) {
      units.push_back({i, 1, UnitKind::kFolded});
      runs.end(i + 1);
      ++i;
      continue;
    }
    Unit u = features.fusion ? unit_at(g, i) : Unit{i, 1, UnitKind::kSingle};
    for (uint32_t k = i + 1; k < i + u.count; ++k)
      if (folded.has(k)) u = {i, 1, UnitKind::kSingle};  // a product's epilogue took node k
    const pi_node& n = g.nodes[i];
    if (u.kind == UnitKind::kSingle && features.prequant && matvec_int_dot(n, features)) {
      const bool fresh = runs.starts_run(i);
      if (fresh) {
        run_codes = i == quantized || matvec_prequant(n, features);
        run_norm = i == quantized ? pending : 0;
      }
      u.reads_codes = run_codes;
      u.scale_norm = run_codes ? run_norm : 0;
      u.quantize = fresh && run_codes && i != quantized;
      if (features.fusion && u.reads_codes && matvec_direct(n, true) && !folded.full()) {
        fold_epilogue(g, u);
        folded.add(u.rope);
        folded.add(u.cache);
        if (u.rope == 0 && u.cache == 0 && norm_foldable(g, i, features)) {
          u.norm = i + 1;
          folded.add(u.norm);
          pending = i + 2;
          quantized = i + 4;
        } else if (u.rope == 0 && u.cache == 0 && swiglu_foldable(g, i, features)) {
          u.swiglu = i + 2;
          folded.add(i + 1);
          folded.add(u.swiglu);
          pending = 0;
          quantized = i + 3;
        }
      }
    } else if (features.fusion && swiglu_quant_at(g, i, features)) {
      u.kind = UnitKind::kSwigluQuant;
      quantized = i + 1;
      pending = 0;
      runs.end(i + 1);
    } else {
      u.writes_codes = (pending == 0 || i != pending) &&
                       (norm_codes_at(g, u, features) ||
                        (u.kind == UnitKind::kSingle && attn_codes_at(g, i, features)));
      if (u.writes_codes) {
        quantized = i + u.count;
        pending = 0;
      }
      runs.end(i + u.count);
    }
    units.push_back(u);
    i += u.count;
  }
  drop_unread_norms(g, units);
  return units;
}

}  // namespace polyinfer::vk
