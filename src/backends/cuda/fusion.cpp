#include "backends/cuda/fusion.hpp"

#include <algorithm>
#include <cstring>

#include "backends/cuda/matvec_path.hpp"
#include "backends/cuda/tensor_rules.hpp"
#include "backends/fusion_bytes.hpp"

namespace polyinfer::cuda {
namespace {

// GGUF type ids (cuda_common.cuh has them for device code).
constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_K = 12, kQ6_K = 14, kBF16 = 30;

using fusion::independent;
using fusion::overlap;
using fusion::same_tensor;

// A float32 vector of ne[0] values that MUL broadcasts over every row.
bool row_vector(const pi_tensor& w, int64_t k) {
  return w.type == 0 && w.nb[0] == 4 && w.ne[0] == k && w.ne[1] == 1 && w.ne[2] == 1 &&
         w.ne[3] == 1 && w.offset % 4 == 0;
}

// RMS_NORM at i and MUL(norm, w) at i + 1.
bool norm_mul_at(const pi_graph& g, uint32_t i) {
  if (i + 1 >= g.n_nodes) return false;
  const pi_node &n = g.nodes[i], &m = g.nodes[i + 1];
  if (n.op != PI_OP_RMS_NORM || m.op != PI_OP_MUL || n.dst.ne[0] > kMaxFusedNormRow) return false;
  return is_f32_rows(n.src[0]) && is_f32_rows(n.dst) && same_shape(n.src[0], n.dst) &&
         same_tensor(m.src[0], n.dst) && row_vector(m.src[1], n.dst.ne[0]) && is_f32_rows(m.dst) &&
         same_shape(m.dst, n.dst);
}

// ADD(a, b) at i (no broadcast) whose sum RMS_NORM at i + 1 reads.
bool add_norm_mul_at(const pi_graph& g, uint32_t i) {
  if (!norm_mul_at(g, i + 1)) return false;
  const pi_node &a = g.nodes[i], &n = g.nodes[i + 1];
  return a.op == PI_OP_ADD && is_f32_rows(a.src[0]) && is_f32_rows(a.src[1]) &&
         is_f32_rows(a.dst) && same_shape(a.src[0], a.dst) && same_shape(a.src[1], a.dst) &&
         same_tensor(n.src[0], a.dst);
}

bool matvec_member(const pi_node& n) {
  return n.op == PI_OP_MUL_MAT && takes_matvec(n) &&
         matvec_fast_path(n.src[0].type, n.src[0].ne, n.src[1].ne);
}

// MUL_MATs from i on that read the same activations with weights of types
// one launch takes together (one type, or Q4_K and Q6_K: matvec_types_group).
// Q6_K V with Q4_K Q and K in one launch, not two, took llama-8b Q4_K_M tg128
// from 408-409 to 431-433 tok/s and llama-1b Q4_K_M from 1,445-1,451 to
// 1,514-1,573 (H200, session 34), though the mixed launch dots one row per
// warp where Q4_K alone takes two (matvec.cu's launch_fast_nc).
uint32_t matvec_group_at(const pi_graph& g, uint32_t i) {
  if (!matvec_member(g.nodes[i])) return 1;
  uint32_t n = 1;
  while (n < kMaxGroupMats && i + n < g.n_nodes) {
    const pi_node &a = g.nodes[i], &b = g.nodes[i + n];
    if (!matvec_member(b) || !same_tensor(a.src[1], b.src[1]) ||
        !matvec_types_group(a.src[0].type, b.src[0].type))
      break;
    bool free = true;
    for (uint32_t j = 0; j < n; ++j) free = free && independent(g.nodes[i + j], b);
    if (!free) break;
    ++n;
  }
  return n;
}

// Rows of float32 stored one after another (no gaps, no views with strides).
bool contiguous_f32(const pi_tensor& t) {
  if (t.type != kF32 || t.nb[0] != 4 || t.offset % 4 != 0) return false;
  for (int d = 1; d < 4; ++d) {
    if (t.nb[d] != t.nb[d - 1] * static_cast<uint64_t>(t.ne[d - 1])) return false;
  }
  return true;
}

// FLASH_ATTN of one token whose output (D x H values, D % 32 == 0, so that
// no 8-bit block spans two heads) `col` reads as one flat column: llama's
// O projection over the reshaped heads.
bool attn_flat_output(const pi_node& a, const pi_tensor& col) {
  const pi_tensor& o = a.dst;
  return a.op == PI_OP_FLASH_ATTN && o.ne[2] == 1 && o.ne[3] == 1 && o.ne[0] % 32 == 0 &&
         contiguous_f32(o) && contiguous_f32(col) && col.buffer == o.buffer &&
         col.offset == o.offset && col.ne[0] == o.ne[0] * o.ne[1] && col.ne[1] == 1 &&
         col.ne[2] == 1 && col.ne[3] == 1;
}

// One contiguous float32 vector of k values at a 16-byte aligned offset.
bool f32_vector(const pi_tensor& t, int64_t k) {
  return contiguous_f32(t) && t.ne[0] == k && t.ne[1] == 1 && t.ne[2] == 1 && t.ne[3] == 1 &&
         t.offset % 16 == 0;
}

// Two tensors that are the same elements or share no byte: a thread that
// reads or writes element e of one touches only element e of the other.
bool same_or_apart(const pi_tensor& a, const pi_tensor& b) {
  return same_tensor(a, b) || !overlap(a, b);
}

// An F16 product of one activation column that the direct kernel takes
// (16-byte aligned rows, matvec.cu's f16_direct), its output a vector.
bool f16_direct_product(const pi_node& n) {
  const pi_tensor& w = n.src[0];
  return matvec_member(n) && w.type == kF16 && w.offset % 16 == 0 && w.nb[1] % 16 == 0 &&
         w.ne[2] == 1 && w.ne[3] == 1 && f32_vector(n.src[1], w.ne[0]) &&
         f32_vector(n.dst, w.ne[1]);
}

// A quantized product of one activation column on the fast path, its
// output a vector: the kernel adds a residual to its sums (kMatvecAdd).
bool quant_vector_product(const pi_node& n) {
  const pi_tensor& w = n.src[0];
  return n.op == PI_OP_MUL_MAT && matvec_quantizes(n) && f32_vector(n.src[1], w.ne[0]) &&
         f32_vector(n.dst, w.ne[1]);
}

// ... whose kernel also makes its 8-bit activations from a norm's input, in
// shared memory: rows of at most kMaxNormFoldQK values, no residual codes
// (not Q8_0) (kNormMatvec).
bool quant_fold_product(const pi_node& n) {
  return quant_vector_product(n) && !matvec_residual(n) && n.src[0].ne[0] <= kMaxNormFoldQK;
}

// A product whose kernel can do the ADD after it (kMatvecAdd).
bool fold_add_product(const pi_node& n) {
  return f16_direct_product(n) || quant_vector_product(n);
}

// RMS_NORM(x), MUL(norm, w) at i of one vector of at most kMaxF16RowsK
// values and 1-3 products at i + 2 over the MUL's output, all F16 or all
// quantized (quant_fold_product) of one type, or Q4_K and Q6_K (a warp per
// row, each of one matrix); 0 when they do not fold (kNormMatvec), else
// the number of products. The products' blocks all read x and w while
// the first block writes the norm's outputs and each block its rows, so no output may share bytes
// with x, w, a weight or another output (the norm's two outputs may be the same elements, written
// in node order by one thread).
uint32_t norm_matvec_at(const pi_graph& g, uint32_t i) {
  if (!norm_mul_at(g, i) || i + 2 >= g.n_nodes) return 0;
  const pi_node &nm = g.nodes[i], &ml = g.nodes[i + 1];
  const int64_t k = nm.src[0].ne[0];
  if (k % 8 != 0 || k > kMaxF16RowsK || !f32_vector(nm.src[0], k) || !f32_vector(ml.src[1], k) ||
      !f32_vector(nm.dst, k) || !f32_vector(ml.dst, k) || !same_or_apart(nm.dst, ml.dst)) {
    return 0;
  }
  uint32_t n = std::min(matvec_group_at(g, i + 2), kMaxUnitNodes - 2);
  const bool quantized = matvec_quantizes(g.nodes[i + 2]);
  const pi_tensor* in[2 + kMaxGroupMats] = {&nm.src[0], &ml.src[1]};
  for (uint32_t j = 0; j < n; ++j) {
    const pi_node& p = g.nodes[i + 2 + j];
    if (!(quantized ? quant_fold_product(p) : f16_direct_product(p)) ||
        !same_tensor(p.src[1], ml.dst))
      return 0;
    in[2 + j] = &p.src[0];
  }
  for (uint32_t o = 0; o < 2 + n; ++o) {
    const pi_tensor& out = o == 0 ? nm.dst : o == 1 ? ml.dst : g.nodes[i + o].dst;
    for (uint32_t j = 0; j < 2 + n; ++j) {
      if (overlap(out, *in[j])) return 0;
    }
    for (uint32_t p = std::max<uint32_t>(o + 1, 2); p < 2 + n; ++p) {
      if (overlap(out, g.nodes[i + p].dst)) return 0;
    }
  }
  return n;
}

// The residual of an ADD at i + 1 of product i's output (a float32 vector)
// and a residual vector, which the product's kernel does (kMatvecAdd,
// kMatvecNormQ); nullptr when it cannot. The thread that writes a row's sum
// reads that row's residual first, so the ADD's output may be the same
// elements as the residual or the product's output, not other bytes of them,
// and none of the product's inputs; the residual, read after other rows of
// the product's output are written, shares no byte with it.
const pi_tensor* added_residual(const pi_graph& g, uint32_t i) {
  const pi_node &mm = g.nodes[i], &ad = g.nodes[i + 1];
  if (ad.op != PI_OP_ADD) return nullptr;
  const bool first = same_tensor(ad.src[0], mm.dst);
  if (!first && !same_tensor(ad.src[1], mm.dst)) return nullptr;
  const pi_tensor& res = ad.src[first ? 1 : 0];
  const int64_t n = mm.dst.ne[0];
  if (!f32_vector(res, n) || !f32_vector(ad.dst, n) || overlap(ad.dst, mm.src[0]) ||
      overlap(ad.dst, mm.src[1]) || overlap(mm.dst, res) || !same_or_apart(ad.dst, res) ||
      !same_or_apart(ad.dst, mm.dst))
    return nullptr;
  return &res;
}

// An F16 or quantized product at i and the ADD at i + 1 of its output and a
// residual vector (added_residual), whose sum a folded norm at i + 2 reads
// (kMatvecAdd).
bool matvec_add_at(const pi_graph& g, uint32_t i) {
  if (i + 1 >= g.n_nodes || !fold_add_product(g.nodes[i]) || norm_matvec_at(g, i + 2) == 0)
    return false;
  return added_residual(g, i) != nullptr && same_tensor(g.nodes[i + 2].src[0], g.nodes[i + 1].dst);
}

// A product on the GEMM path with 16-bit weights, one batch of activations.
bool gemm_16(const pi_node& n) {
  const pi_tensor &w = n.src[0], &a = n.src[1];
  return n.op == PI_OP_MUL_MAT && !takes_matvec(n) && (w.type == kF16 || w.type == kBF16) &&
         w.ne[2] * w.ne[3] == 1 && a.ne[2] * a.ne[3] == 1;
}

bool same_layout(const pi_tensor& a, const pi_tensor& b) {
  return a.type == b.type && std::equal(a.ne, a.ne + 4, b.ne) && std::equal(a.nb, a.nb + 4, b.nb);
}

// MUL_MATs at i and i + 1 over the same activations, weights and outputs of
// one layout, neither reading or overwriting what the other writes.
bool gemm_pair_at(const pi_graph& g, uint32_t i) {
  if (i + 1 >= g.n_nodes) return false;
  const pi_node &a = g.nodes[i], &b = g.nodes[i + 1];
  return gemm_16(a) && gemm_16(b) && same_tensor(a.src[1], b.src[1]) &&
         same_layout(a.src[0], b.src[0]) && same_layout(a.dst, b.dst) && independent(a, b);
}

bool rope_pair_at(const pi_graph& g, uint32_t i) {
  if (i + 1 >= g.n_nodes) return false;
  const pi_node &a = g.nodes[i], &b = g.nodes[i + 1];
  return a.op == PI_OP_ROPE && b.op == PI_OP_ROPE && same_tensor(a.src[1], b.src[1]) &&
         same_tensor(a.src[2], b.src[2]) && std::memcmp(a.i, b.i, sizeof a.i) == 0 &&
         std::memcmp(a.f, b.f, sizeof a.f) == 0 && a.src[0].ne[2] == b.src[0].ne[2] &&
         independent(a, b);
}

// Whether a later node of a unit would read what an earlier one writes.
bool reads_output(const pi_node& later, const pi_node& earlier) {
  for (int j = 0; j < PI_MAX_SRC; ++j) {
    if (overlap(later.src[j], earlier.dst)) return true;
  }
  return false;
}

bool kv_cache_type(uint32_t t) {
  return t == kF32 || t == kF16 || t == kBF16;
}

// One token's values that the ROPE+KV block holds: even rows (pairs), at most `most`.
bool one_token(const pi_tensor& t, int64_t most) {
  return t.ne[2] == 1 && t.ne[3] == 1 && t.ne[0] % 2 == 0 && t.ne[0] * t.ne[1] <= most;
}

// ROPE(Q), ROPE(K), CPY(K's rope -> cache), CPY(V -> cache) at i, one token.
// The single-block kernel reads every input before a block barrier and writes
// after it, so an output over an input of another node is safe (a graph may
// put ROPE K's output over Q, which dies at ROPE Q); an output that a later
// node reads (other than the roped K, passed in registers) or two outputs
// sharing bytes are not.
bool rope_kv_at(const pi_graph& g, uint32_t i) {
  if (i + 3 >= g.n_nodes) return false;
  const pi_node &rq = g.nodes[i], &rk = g.nodes[i + 1], &ck = g.nodes[i + 2], &cv = g.nodes[i + 3];
  if (rq.op != PI_OP_ROPE || rk.op != PI_OP_ROPE || ck.op != PI_OP_CPY || cv.op != PI_OP_CPY)
    return false;
  if (!same_tensor(rq.src[1], rk.src[1]) || !same_tensor(rq.src[2], rk.src[2]) ||
      std::memcmp(rq.i, rk.i, sizeof rq.i) != 0 || std::memcmp(rq.f, rk.f, sizeof rq.f) != 0 ||
      rq.src[0].ne[0] != rk.src[0].ne[0] || rq.src[0].ne[0] > kMaxRopeKvHead) {
    return false;
  }
  if (!one_token(rq.src[0], kMaxRopeKvQ) || !one_token(rk.src[0], kMaxRopeKvKv) ||
      !one_token(cv.src[0], kMaxRopeKvKv) || !is_f32_rows(cv.src[0]) ||
      !same_tensor(ck.src[0], rk.dst) || !kv_cache_type(ck.dst.type) ||
      !kv_cache_type(cv.dst.type)) {
    return false;
  }
  if (reads_output(rk, rq) || reads_output(cv, rq) || reads_output(cv, rk) || reads_output(cv, ck))
    return false;
  const pi_node* n[] = {&rq, &rk, &ck, &cv};
  for (int a = 0; a < 4; ++a) {
    for (int b = a + 1; b < 4; ++b) {
      if (overlap(n[a]->dst, n[b]->dst)) return false;
    }
  }
  return true;
}

// The ROPE+KV unit at i writes nothing that any of its nodes reads, except
// the roped K (ROPE K's output, CPY K's source): then no block of a grid can
// overwrite another block's input.
bool rope_kv_outputs_apart(const pi_graph& g, uint32_t i) {
  const pi_node &rq = g.nodes[i], &rk = g.nodes[i + 1], &ck = g.nodes[i + 2], &cv = g.nodes[i + 3];
  const pi_tensor* in[] = {&rq.src[0], &rq.src[1], &rq.src[2], &rk.src[0],
                           &rk.src[1], &rk.src[2], &cv.src[0]};
  for (const pi_node* n : {&rq, &rk, &ck, &cv}) {
    for (const pi_tensor* t : in) {
      if (overlap(n->dst, *t)) return false;
    }
  }
  return true;
}

bool cpy_pair_at(const pi_graph& g, uint32_t i) {
  if (i + 1 >= g.n_nodes) return false;
  const pi_node &a = g.nodes[i], &b = g.nodes[i + 1];
  return a.op == PI_OP_CPY && b.op == PI_OP_CPY && a.src[0].type == b.src[0].type &&
         a.dst.type == b.dst.type && independent(a, b);
}

// Whether node `next` (may be past the end) is a MUL_MAT that quantizes what
// `last` writes.
bool quantized_by_next(const pi_graph& g, uint32_t next, const pi_node& last) {
  if (next >= g.n_nodes) return false;
  const pi_node& m = g.nodes[next];
  if (m.op != PI_OP_MUL_MAT || !matvec_quantizes(m)) return false;
  return last.op == PI_OP_FLASH_ATTN ? attn_flat_output(last, m.src[1])
                                     : same_tensor(m.src[1], last.dst);
}

// A quantized product at i, the ADD of its output and a residual vector at
// i + 1 (added_residual), RMS_NORM + MUL at i + 2 and, at i + 4, quantized
// products over the MUL's output (not Q8_0's residual codes): kMatvecNormQ.
// The warps that write the sum read the norm's weight, so the sum shares no
// byte with it. Then, while the products after it read
// their weights and write their outputs, their kernel's warps write the
// norm's two outputs from the sum and the weight: those outputs share no
// byte with any of them (the norm's outputs may be the sum's elements or
// each other's, written in node order by one thread).
bool matvec_norm_q_at(const pi_graph& g, uint32_t i) {
  if (i + 4 >= g.n_nodes || !norm_mul_at(g, i + 2)) return false;
  const pi_node &mm = g.nodes[i], &ad = g.nodes[i + 1], &nm = g.nodes[i + 2], &ml = g.nodes[i + 3];
  const int64_t n = mm.dst.ne[0];
  if (!matvec_quantizes(mm) || mm.src[1].ne[1] != 1 || n % 128 != 0 || n < kMinNormQRows ||
      n > kMaxNormQRows || !f32_vector(mm.dst, n) || added_residual(g, i) == nullptr)
    return false;
  const pi_tensor &sum = ad.dst, &nw = ml.src[1];
  if (!same_tensor(nm.src[0], sum) || !f32_vector(nm.dst, n) || !f32_vector(ml.dst, n) ||
      !f32_vector(nw, n) || !quantized_by_next(g, i + 4, ml) || matvec_residual(g.nodes[i + 4]) ||
      overlap(sum, nw) || !same_or_apart(nm.dst, ml.dst))
    return false;
  for (const pi_tensor* o : {&nm.dst, &ml.dst}) {
    if (!same_or_apart(*o, sum) || overlap(*o, nw)) return false;
  }
  for (uint32_t j = i + 4; j < i + 4 + matvec_group_at(g, i + 4); ++j) {
    const pi_node& p = g.nodes[j];
    for (const pi_tensor* o : {&nm.dst, &ml.dst}) {
      if (overlap(*o, p.src[0]) || overlap(*o, p.dst)) return false;
    }
    if (overlap(p.dst, sum) || overlap(p.dst, nw)) return false;
  }
  return true;
}

// Whether node `next` (may be past the end) is a MUL_MAT on the GEMM path that
// converts what `last` writes to 16 bits (one batch of columns).
bool halved_by_next(const pi_graph& g, uint32_t next, const pi_node& last) {
  if (next >= g.n_nodes) return false;
  const pi_node& m = g.nodes[next];
  return m.op == PI_OP_MUL_MAT && !takes_matvec(m) && m.src[0].type != kF32 &&
         same_tensor(m.src[1], last.dst) && m.src[1].ne[2] * m.src[1].ne[3] == 1;
}

// Whether a unit's kernel can also write its last output in 16 bits.
bool can_half(const Unit& u, const pi_node& last) {
  return u.kind == UnitKind::kNormMul || u.kind == UnitKind::kAddNormMul ||
         (u.kind == UnitKind::kSingle && last.op == PI_OP_SWIGLU);
}

// Whether a unit's kernel can also write its last output as 8-bit blocks.
bool can_quantize(const Unit& u, const pi_node& last) {
  switch (u.kind) {
    case UnitKind::kNormMul:
    case UnitKind::kAddNormMul:
    case UnitKind::kMatvecNormQ:
      return true;
    case UnitKind::kSingle:
      return last.op == PI_OP_SWIGLU || last.op == PI_OP_FLASH_ATTN;
    default:
      return false;
  }
}

// Where both fit, Q4_K and Q6_K products after the norm take it in the
// product before it (kMatvecNormQ) and Q4_0 products fold it (kMatvecAdd,
// then kNormMatvec): on the H200 (session 25, tg128) llama-8b Q4_0 446 -> 469
// tok/s folded, llama-8b Q4_K_M 410 -> 402. Q5_K products (not measured) fold
// it as Q4_0's do, on paths the CUDA conformance runs for Q5_K.
bool norm_before_kquants(const pi_graph& g, uint32_t i) {
  if (i + 4 >= g.n_nodes) return false;
  const uint32_t t = g.nodes[i + 4].src[0].type;
  return (t == kQ4_K || t == kQ6_K) && matvec_norm_q_at(g, i);
}

Unit unit_at(const pi_graph& g, uint32_t i) {
  if (norm_before_kquants(g, i)) return {i, 4, UnitKind::kMatvecNormQ};
  if (matvec_add_at(g, i)) return {i, 2, UnitKind::kMatvecAdd};
  if (matvec_norm_q_at(g, i)) return {i, 4, UnitKind::kMatvecNormQ};
  if (const uint32_t n = norm_matvec_at(g, i); n > 0) return {i, 2 + n, UnitKind::kNormMatvec};
  if (add_norm_mul_at(g, i)) return {i, 3, UnitKind::kAddNormMul};
  if (norm_mul_at(g, i)) return {i, 2, UnitKind::kNormMul};
  if (rope_kv_at(g, i)) {
    Unit u{i, 4, UnitKind::kRopeKv};
    u.spread = rope_kv_outputs_apart(g, i);
    return u;
  }
  if (rope_pair_at(g, i)) return {i, 2, UnitKind::kRopePair};
  if (cpy_pair_at(g, i)) return {i, 2, UnitKind::kCpyPair};
  if (const uint32_t n = matvec_group_at(g, i); n > 1) return {i, n, UnitKind::kMatvecGroup};
  if (gemm_pair_at(g, i)) return {i, 2, UnitKind::kGemmPair};
  return {i, 1, UnitKind::kSingle};
}

}  // namespace

std::vector<Unit> plan_units(const pi_graph& g, bool fuse) {
  std::vector<Unit> units;
  units.reserve(g.n_nodes);
  for (uint32_t i = 0; i < g.n_nodes;) {
    Unit u = fuse ? unit_at(g, i) : Unit{i, 1, UnitKind::kSingle};
    const pi_node& last = g.nodes[i + u.count - 1];
    u.quantize_next = fuse && can_quantize(u, last) && quantized_by_next(g, i + u.count, last);
    u.quantize_residual = u.quantize_next && matvec_residual(g.nodes[i + u.count]);
    u.half_next = fuse && can_half(u, last) && halved_by_next(g, i + u.count, last);
    u.half_bf16 = u.half_next && g.nodes[i + u.count].src[0].type == kBF16;
    units.push_back(u);
    i += u.count;
  }
  return units;
}

std::vector<uint32_t> unit_leaders(const std::vector<Unit>& units, uint32_t n_nodes) {
  std::vector<uint32_t> leader(n_nodes);
  for (const Unit& u : units) {
    for (uint32_t k = 0; k < u.count; ++k) leader[u.first + k] = u.first;
  }
  return leader;
}

}  // namespace polyinfer::cuda
