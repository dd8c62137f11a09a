#include "backends/vulkan/vk_matvec_plan.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace polyinfer::vk {
namespace {

constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14;

// ---- shaders/mul_mat_vec_staged.comp ----------------------------------------

// A weight type the staged kernel reads: values and bytes per block, the
// longest segment (values of a row staged at once) and the most rows per
// workgroup. Q4_0 and the K-quants stage 1,024 values of 4 rows, which makes
// a workgroup one subgroup of 32 (a unit of 32 values each): on the H200
// (BENCHMARKS.md, Vulkan session 8: tg64 of gen-model llama-8b) Q4_0 110.6
// tok/s against 102.5 with 2,048 values of 4 rows and 81.4 (tg128) with 4,096
// values of 8 rows (wg 128); Q4_K_M 98.9 against 94.2 and 67.1; llama-1b
// Q4_0 339 against 328 and 272. Small workgroups wait at cheaper barriers
// and more of them share an SM. F16 and Q8_0 keep their first plan (not
// measured): an invocation's share of the pieces (about rows x bytes per 32
// values / 16) stays near 10 registers of 16 bytes.
struct StagedFormat {
  uint32_t block, bytes, seg, rows;
};
bool staged_format(uint32_t type, int64_t k, StagedFormat* f) {
  switch (type) {
    case kF16:  // units of 8 values: rows of other lengths go to mul_mat_vec.comp
      *f = {1, 2, 1024, 8};
      return k % 8 == 0;
    case kQ4_0:
      *f = {32, 18, 1024, 4};
      return true;
    case kQ8_0:
      *f = {32, 34, 2048, 4};
      return true;
    case kQ4_K:
      *f = {256, 144, 1024, 4};
      return true;
    case kQ5_K:
      *f = {256, 176, 1024, 4};
      return true;
    case kQ6_K:
      *f = {256, 210, 1024, 4};
      return true;
    default:
      return false;
  }
}

// Values per unit (UNIT in shaders/staged_units.glsl).
uint32_t unit_values(uint32_t type) {
  return type == kF16 ? 8 : 32;
}

// Types dotted with 8-bit activations where the device has integer dot
// products. Q8_0 is not: with 8-bit activation codes a model oracle flipped
// on the CPU and on CUDA (CUDA adds residual codes; here Q8_0 keeps floats).
bool int_dot_type(uint32_t type) {
  return type == kQ4_0 || type == kQ4_K || type == kQ5_K || type == kQ6_K;
}

// Segment length: the row split into the fewest segments of at most f.seg
// values, as even as the block allows (14336 values of Q4_0: 4 x 3584, not
// 3 x 4096 + 2048, whose last segment would leave half the workgroup idle).
uint32_t staged_seg(const StagedFormat& f, uint32_t type, int64_t k) {
  const uint64_t step = std::max(f.block, unit_values(type));
  const uint64_t n = (static_cast<uint64_t>(k) + f.seg - 1) / f.seg;
  const uint64_t len = (static_cast<uint64_t>(k) + n - 1) / n;
  return static_cast<uint32_t>((len + step - 1) / step * step);
}

// Shared memory of the staged kernel, as its declarations add up: the row
// slots (staged_rows.glsl), the activation codes when the workgroup makes
// them (unit_dot_q8.glsl), the reduction (reduce.glsl) and a pending norm's
// subgroup sums (norm_scale.glsl).
uint64_t staged_shared(const StagedFormat& f, uint32_t seg, uint32_t rows, int64_t cols,
                       bool int_dot) {
  const uint64_t slot16 = (seg / f.block * f.bytes + 30) / 16;
  uint64_t bytes =
      4 * (rows * slot16 * 4 + 4) + 4 * static_cast<uint64_t>(rows * cols) * 32 + 4 * 32;
  if (int_dot) bytes += static_cast<uint64_t>(cols) * (seg / 32) * (32 + 8);
  return bytes;
}

// Whether the reduction may use subgroups: reduce.glsl keeps 32 subgroup
// totals per value.
bool subgroup_reduce(const Features& f, uint32_t wg) {
  return f.subgroup_arith && f.subgroup_size > 0 && wg <= 32 * f.subgroup_size;
}

// Rows per workgroup, within what the format allows: at most 16 sums per
// invocation (registers), and at least ~256 workgroups when the matrix has
// the rows (the K and V projections of a 1B model have 512), so that a
// small product still spreads over the GPU (this cap was not measured; the
// formats' rows were, above). A product that reads codes (`codes`) takes 2:
// twice the workgroups, each with half the staging. On the H200 (session 16,
// tg128, two rounds each) llama-8b Q4_0 175.0 tok/s against 168.9 with 4,
// Q4_K_M 141.9 against 136.5, llama-1b Q4_K_M 448.9 against 409.4, llama-1b
// Q4_0 513.5 against 506.6; segments of 2,048 or 4,096 values where the
// matrix has fewer rows were no better.
uint32_t staged_rows(const StagedFormat& f, int64_t n, int64_t cols, bool codes) {
  const uint32_t by_cols = cols <= 2 ? 8 : cols <= 4 ? 4 : 2;
  const uint32_t by_n = std::bit_floor(static_cast<uint32_t>(std::clamp<int64_t>(n / 256, 1, 8)));
  return std::min({f.rows, by_cols, by_n, codes ? 2u : 8u});
}

void plan_staged(const pi_node& n, const StagedFormat& f, const Features& feat, bool codes,
                 OpPlan* p) {
  const pi_tensor &w = n.src[0], &d = n.dst;
  const uint32_t type = w.type, cols = static_cast<uint32_t>(d.ne[1]);
  const uint32_t seg = staged_seg(f, type, w.ne[0]);
  const bool int_dot = matvec_int_dot(n, feat);
  const bool own_codes = int_dot && !codes;
  uint32_t rows = staged_rows(f, d.ne[0], cols, codes);
  // Fewer rows until the shared memory fits the device. One row fits the
  // 16 KiB every device has (segments of at most 2,048 values: under 4 KiB).
  while (staged_shared(f, seg, rows, cols, own_codes) > feat.max_shared && rows > 1) rows /= 2;
  // At least the segment's units (at most 128 in every format): with codes
  // read from src2 each invocation prefetches one unit's activations.
  const uint32_t wg = std::clamp<uint32_t>(std::bit_ceil(seg / unit_values(type)), 32, 128);
  // Float activations, codes made per workgroup, codes read from src2.
  static const char* const kNames[3][2] = {
      {"mul_mat_vec_staged", "mul_mat_vec_staged_subgroup"},
      {"mul_mat_vec_staged_dot", "mul_mat_vec_staged_dot_subgroup"},
      {"mul_mat_vec_staged_dotq", "mul_mat_vec_staged_dotq_subgroup"}};
  const int path = !int_dot ? 0 : own_codes ? 1 : 2;
  const uint64_t groups = (static_cast<uint64_t>(d.ne[0]) + rows - 1) / rows;
  *p = {kNames[path][subgroup_reduce(feat, wg)],
        {type, cols, 0, wg, rows, seg},
        6,
        groups * static_cast<uint64_t>(d.ne[2] * d.ne[3]),
        {}};
}

// ---- shaders/mul_mat_vec_direct.comp ----------------------------------------

// Q4_0, Q4_K or Q6_K rows dotted with codes read from src2, one batch: whole
// items (a Q4_0 block, a quarter of a K-quant block) loaded into registers, no
// staging (the shader says why). Q4_0 and Q6_K rows start at an even byte,
// Q4_K rows at a word (one batch: nb[2], nb[3] do not matter).
bool direct_format(const pi_node& n, bool codes) {
  const pi_tensor &w = n.src[0], &d = n.dst;
  const uint64_t align = w.type == kQ4_K ? 4 : 2;  // sub-allocations start at 256 bytes
  const bool aligned =
      (w.type == kQ4_0 || w.type == kQ4_K || w.type == kQ6_K) && (w.offset | w.nb[1]) % align == 0;
  return codes && aligned && d.ne[2] == 1 && d.ne[3] == 1;
}

// Rows per workgroup of the plain direct kernel for product n: 2 of Q4_0 (4
// in one-column products of at least 8,192 rows), 4 of Q4_K in one-column
// products of 4,096 to 8,192 rows (llama-8b's Q), else 1 of Q4_K or Q6_K.
// Four Q4_K rows: on the H200 (session 42, GPU span of a decode step, three
// calls) llama-8b Q4_K_M 2,822-2,824 us against 2,866-2,868 with one, 2,887
// with two and 3,069 with eight; four for K and V too (1,024 rows) 3,104, for
// the output projections (32,000 and 128,256 rows) level on llama-8b and 858
// against 854 on llama-1b Q4_K_M, for llama-1b's Q (2,048 rows, with its
// output projection) 1,018 against 853.
uint32_t direct_rows_for(const pi_node& n) {
  const pi_tensor &w = n.src[0], &d = n.dst;
  if (w.type == kQ4_0) return d.ne[0] >= 8192 && d.ne[1] == 1 ? 4 : 2;
  return w.type == kQ4_K && d.ne[1] == 1 && d.ne[0] >= 4096 && d.ne[0] <= 8192 ? 4 : 1;
}

// One item per invocation and pass, workgroups of the row's items within
// 32..64, rows per workgroup as direct_rows_for says (the norm and SWIGLU
// modules may take more: plan_matvec_norm_tail, plan_matvec_swiglu_tail). Four Q4_0 rows: on
// the H200 (session 37, GPU span of a decode step, two rounds) llama-8b
// Q4_0's gate and up made it 2,628 us against 2,644-2,645 with two. On the H200
// (session 17, tg128, two rounds; BENCHMARKS.md) llama-8b Q4_0 251.9 / 243.8 tok/s against 241.6 /
// 238.9 with 128 invocations, 219.7 / 215.8 with 256, 226.3 / 222.4 with 2 items per pass and 221.7
// / 226.5 staged; llama-8b Q4_K_M 186.4 / 187.5 with 1 row against 182.8 / 182.3 with 2 and 170.2 /
// 169.4 staged; llama-1b Q4_K_M (rows of 32 items) 575.1 / 562.6 with 32 invocations against 536.2
// / 523.6 with 64. Q4_K rows that start 16-byte aligned (as GGUF's 32-byte alignment leaves them)
// load an item as 3 uvec4s (PIECES): llama-8b Q4_K_M 209.0 / 210.4 against 196.4 / 200.0 with 12
// words. Q4_0 with 4 rows or 32 invocations was no better (241.1 / 243.5, 245.5 / 236.5 against
// 247.5 / 246.7). Each invocation's activation blocks held over many rows, as the CUDA held
// kernel does, was slower (session 46, GPU span of a llama-8b Q4_K_M step): 2,897 -> 3,142 us
// with row groups strided over half the workgroups, 2,792 -> 3,013 with subgroups over whole
// rows taking gate, up and the output.
void plan_direct(const pi_node& n, const Features& feat, OpPlan* p) {
  const pi_tensor &w = n.src[0], &d = n.dst;
  const bool qk = w.type != kQ4_0;  // two units per item
  const uint64_t items = static_cast<uint64_t>(w.ne[0]) / (qk ? 64 : 32);
  const uint32_t wg = static_cast<uint32_t>(std::clamp<uint64_t>(std::bit_ceil(items), 32, 64));
  const uint32_t rows = direct_rows_for(n);
  const uint32_t pieces = w.type == kQ4_K && (w.offset | w.nb[1]) % 16 == 0 ? 1 : 0;
  const uint64_t groups = (static_cast<uint64_t>(d.ne[0]) + rows - 1) / rows;
  *p = {subgroup_reduce(feat, wg) ? "mul_mat_vec_direct_subgroup" : "mul_mat_vec_direct",
        {w.type, static_cast<uint32_t>(d.ne[1]), 0, wg, rows, pieces},
        6,
        groups,
        {}};
}

// The rows per workgroup of a direct-kernel plan for node n set to `rows`.
void direct_rows(const pi_node& n, uint32_t rows, OpPlan* p) {
  p->spec[4] = rows;
  p->groups = (static_cast<uint64_t>(n.dst.ne[0]) + rows - 1) / rows;
}

// ---- shaders/mul_mat_vec_f16.comp -------------------------------------------

// F16 rows of a multiple of 8 values that start 16-byte aligned (as GGUF
// leaves them), one batch: the shader loads each row's 16-byte pieces
// straight into registers.
bool f16_direct_format(const pi_node& n) {
  const pi_tensor &w = n.src[0], &d = n.dst;
  return w.type == kF16 && w.ne[0] % 8 == 0 && (w.offset | w.nb[1]) % 16 == 0 && d.ne[2] == 1 &&
         d.ne[3] == 1;
}

// Workgroups of 128 (fewer for rows shorter than 256 pieces), 2 pieces of each
// row per invocation and pass; 4 rows per workgroup for the wide matrices of
// one or two columns (llama's gate, up and output), 2 for the rest, 1 past
// 4 columns (at most 8 sums per invocation). On the H200 (session 27, llama-1b
// F16 tg128, one call) this plan gave 726.8 tok/s against 295.6 staged; 4 rows
// everywhere 712.2, 2 rows 730.5, 1 row 718.2, 4 pieces a pass 723.3,
// workgroups of 256 744.8 and of 64 710.5: within the machine's spread.
void plan_f16_direct(const pi_node& n, const Features& feat, OpPlan* p) {
  const pi_tensor &w = n.src[0], &d = n.dst;
  const uint64_t pieces = static_cast<uint64_t>(w.ne[0]) / 8;
  const uint32_t pass = 2;
  const uint32_t wg =
      static_cast<uint32_t>(std::clamp<uint64_t>(std::bit_ceil(pieces / pass), 32, 128));
  const int64_t cols = d.ne[1];
  const uint32_t rows = cols > 4 ? 1 : cols > 2 ? 2 : d.ne[0] >= 8192 ? 4 : 2;
  const uint64_t groups = (static_cast<uint64_t>(d.ne[0]) + rows - 1) / rows;
  *p = {subgroup_reduce(feat, wg) ? "mul_mat_vec_f16_subgroup" : "mul_mat_vec_f16",
        {kF16, static_cast<uint32_t>(cols), 0, wg, rows, pass},
        6,
        groups,
        {}};
}

// ---- shaders/mul_mat_vec.comp (the other types) -----------------------------

// NROWS there: few columns leave registers for more rows.
uint32_t element_rows(int64_t cols) {
  return cols <= 2 ? 4 : 2;
}
// The workgroup size: the power of two that gives every invocation one unit
// of a row (F32: 4 values; the rest one), within 32..256.
uint32_t element_workgroup(uint32_t type, int64_t k) {
  const uint64_t unit = type == kF32 ? 4 : 1;
  const uint64_t units = std::max<uint64_t>(static_cast<uint64_t>(k) / unit, 1);
  return static_cast<uint32_t>(std::clamp<uint64_t>(std::bit_ceil(units), 32, 256));
}

}  // namespace

// Every matrix-vector product of these types, up to kMatvecCols columns: with
// float activations (until session 28 past 2 columns) the staged kernel decodes
// each unit once per column (a Q4_K 4096 x 57344 product of 4 columns: 168
// GB/s on the H100, 682 with codes).
bool matvec_int_dot(const pi_node& n, const Features& features) {
  StagedFormat f;
  return n.op == PI_OP_MUL_MAT && features.int_dot && n.dst.ne[1] <= kMatvecCols &&
         int_dot_type(n.src[0].type) && staged_format(n.src[0].type, n.src[0].ne[0], &f);
}

bool matvec_prequant(const pi_node& n, const Features& features) {
  return features.prequant && matvec_int_dot(n, features) &&
         n.src[0].ne[0] >= features.prequant_min_k;
}

bool matvec_direct(const pi_node& n, bool codes) {
  return direct_format(n, codes);
}

bool matvec_direct_pairs(const pi_node& n) {
  return direct_rows_for(n) % 2 == 0;
}

void plan_matvec_epilogue(bool rope, int cache_type, OpPlan* p) {
  p->spec[6] = rope ? 1 : 0;
  p->spec[7] = static_cast<uint32_t>(cache_type + 1);
  p->n_spec = 8;
}

bool matvec_direct_norm(const pi_node& n, const Features& features) {
  return features.subgroup_lanes8 && features.memory_model && n.dst.ne[0] % 32 == 0 &&
         n.dst.ne[1] == 1;
}

// K-quant rows two per workgroup from 4,096 rows up, one below: on the H200
// (session 36, GPU span of a decode step, two rounds) llama-8b Q4_K_M's
// products of 4,096 rows made the step 3,491 us with two rows, 3,645 with
// one, 3,540 with no norm blocks; llama-1b Q4_K_M's of 2,048 rows 1,082 us
// with one row, 1,108 with two, 1,131 with no norm blocks.
// Q4_0 rows stay two: four made llama-1b Q4_0's step 881 us against 860
// and llama-8b Q4_0's 2,703 against 2,641 (session 37, two rounds).
void plan_matvec_norm_tail(const pi_node& n, OpPlan* p) {
  p->shader = "mul_mat_vec_direct_norm";
  if (n.src[0].type == kQ4_0 || n.dst.ne[0] >= 4096) direct_rows(n, 2, p);
}

bool matvec_direct_alike(const pi_node& a, const pi_node& b) {
  const pi_tensor &x = a.src[0], &y = b.src[0];
  return x.type == y.type && x.ne[0] == y.ne[0] && x.ne[1] == y.ne[1] && x.nb[1] == y.nb[1] &&
         (x.offset % 16 == 0) == (y.offset % 16 == 0) && a.dst.ne[1] == b.dst.ne[1];
}

bool matvec_direct_swiglu(const pi_node& gate, const Features& features) {
  return matvec_direct_norm(gate, features) &&
         (gate.src[0].type != kQ4_0 || gate.dst.ne[0] <= 8192);
}

// K-quant rows two per workgroup up to 8,192 rows, four past them: on the
// H200 (session 36, GPU span of a step) llama-1b Q4_K_M 1,026 us against
// 1,092 with one row, llama-8b Q4_K_M 3,667 against 3,891 (session 37:
// four, 1,045 against 1,025 on llama-1b; session 42, two rounds: llama-1b
// Q4_K_M 860 against 854 with two); llama-8b Q4_K_M's 14,336 rows (session
// 42, two calls, two rounds each) 2,860-2,869 us with four against
// 2,885-2,900 unfolded, 3,027 with two, 3,244 with one, 2,993 with eight.
// Q4_0 rows four: llama-1b Q4_0 842-846 us against 860-864 with two, 870
// with eight (session 37, two calls, two rounds each).
void plan_matvec_swiglu_tail(const pi_node& gate, OpPlan* p) {
  p->shader = "mul_mat_vec_direct_swiglu";
  direct_rows(gate, gate.src[0].type == kQ4_0 || gate.dst.ne[0] > 8192 ? 4 : 2, p);
  p->groups *= 2;
}

// Q6_K rows: on the H200 (session 39, GPU span of a decode step, two rounds,
// one call) llama-1b Q4_K_M 1,018 us against 1,024-1,025 (its Q6_K down
// product 14.04 -> 13.51 us, the output projection 31.89 -> 30.23), llama-8b
// Q4_K_M level (3,446-3,447 against 3,442-3,444), llama-1b and 8b Q4_0 (a
// Q6_K output projection) level. Q4_0 rows (session 40, two rounds, one call):
// llama-8b Q4_0 2,425 us against 2,452-2,454, llama-1b Q4_0 787 against 788.
// Q4_K rows gained nothing. One column only: each further column's early
// blocks hold 12 more registers (not measured).
void plan_matvec_early_acts(const pi_node& n, OpPlan* p) {
  const uint32_t type = n.src[0].type;
  if (std::strncmp(p->shader, "mul_mat_vec_direct", 18) != 0 || (type != kQ6_K && type != kQ4_0) ||
      n.dst.ne[1] != 1)
    return;
  p->spec[9] = 1;
  p->n_spec = std::max<uint32_t>(p->n_spec, 10);
}

void plan_matvec_norm_scale(float eps, OpPlan* p) {
  p->spec[8] = 1;
  p->n_spec = std::max<uint32_t>(p->n_spec, 9);
  p->extra[8] = std::bit_cast<uint32_t>(eps);
}

void plan_matvec(const pi_node& n, const Features& features, OpPlan* p) {
  plan_matvec_codes(n, features, matvec_prequant(n, features), p);
}

void plan_matvec_codes(const pi_node& n, const Features& features, bool codes, OpPlan* p) {
  const pi_tensor &w = n.src[0], &d = n.dst;
  const bool reads_codes = codes && matvec_int_dot(n, features);
  if (direct_format(n, reads_codes)) {
    plan_direct(n, features, p);
    return;
  }
  if (f16_direct_format(n)) {
    plan_f16_direct(n, features, p);
    return;
  }
  StagedFormat f;
  if (staged_format(w.type, w.ne[0], &f)) {
    plan_staged(n, f, features, reads_codes, p);
    return;
  }
  const uint32_t rows = element_rows(d.ne[1]), wg = element_workgroup(w.type, w.ne[0]);
  const uint64_t groups = (static_cast<uint64_t>(d.ne[0]) + rows - 1) / rows;
  *p = {subgroup_reduce(features, wg) ? "mul_mat_vec_subgroup" : "mul_mat_vec",
        {w.type, static_cast<uint32_t>(d.ne[1]), 0, wg},
        4,
        groups * static_cast<uint64_t>(d.ne[2] * d.ne[3]),
        {}};
}

}  // namespace polyinfer::vk
