#include "backends/vulkan/vk_ops.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>

#include "backends/vulkan/vk_matvec_plan.hpp"

namespace polyinfer::vk {
namespace {

constexpr uint32_t kF32 = 0, kF16 = 1, kQ8_0 = 8, kI32 = 26, kBF16 = 30;

struct TypeInfo {
  uint32_t block, bytes;
};
// The weight types the shaders decode (shaders/dequant.glsl), plus I32.
bool type_info(uint32_t type, TypeInfo* ti) {
  switch (type) {
    case 0:
      *ti = {1, 4};
      return true;
    case 1:
      *ti = {1, 2};
      return true;
    case 30:
      *ti = {1, 2};
      return true;
    case 2:
      *ti = {32, 18};
      return true;
    case 3:
      *ti = {32, 20};
      return true;
    case 6:
      *ti = {32, 22};
      return true;
    case 7:
      *ti = {32, 24};
      return true;
    case 8:
      *ti = {32, 34};
      return true;
    case 10:
      *ti = {256, 84};
      return true;
    case 11:
      *ti = {256, 110};
      return true;
    case 12:
      *ti = {256, 144};
      return true;
    case 13:
      *ti = {256, 176};
      return true;
    case 14:
      *ti = {256, 210};
      return true;
    case 26:
      *ti = {1, 4};
      return true;
    default:
      return false;
  }
}
bool is_weight_type(uint32_t t) {
  TypeInfo ti;
  return t != kI32 && type_info(t, &ti);
}

bool present(const pi_tensor& t) {
  return t.buffer != nullptr;
}
bool f32_rows(const pi_tensor& t) {
  return t.type == kF32 && t.nb[0] == 4;
}
bool same_shape(const pi_tensor& a, const pi_tensor& b) {
  return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}
int64_t nrows(const pi_tensor& t) {
  return t.ne[1] * t.ne[2] * t.ne[3];
}
int64_t nelem(const pi_tensor& t) {
  return t.ne[0] * nrows(t);
}
// Shaders index with 32-bit words; every count and stride must fit.
bool fits32(const pi_tensor& t) {
  for (int d = 0; d < 4; ++d)
    if (t.ne[d] < 1 || t.ne[d] > 0x7FFFFFFF || t.nb[d] > 0xFFFFFFFFull) return false;
  return nelem(t) <= 0xFFFFFFFFll;
}
// nb[0] is the element (or block) size: the row is contiguous.
bool row_contiguous(const pi_tensor& t) {
  TypeInfo ti;
  return type_info(t.type, &ti) && t.nb[0] == ti.bytes && t.ne[0] % ti.block == 0;
}
uint64_t elementwise_groups(const pi_tensor& t) {
  return (nelem(t) + 63) / 64;
}
uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

bool fail(std::string* why, const char* msg) {
  *why = msg;
  return false;
}

// The YaRN corner dims and scales, computed on the host exactly as the CPU reference does.
void rope_extra(const pi_node& n, OpPlan* p) {
  const int n_rot = n.i[1], n_ctx = n.i[2];
  const float base = n.f[0], freq_scale = n.f[1], ext = n.f[2], beta_fast = n.f[4],
              beta_slow = n.f[5];
  auto corr = [&](float rot) {
    return n_rot * std::log(n_ctx / (rot * 2 * std::numbers::pi_v<float>)) / (2 * std::log(base));
  };
  float low = 0, high = 0;
  if (ext != 0.0f) {
    low = std::max(0.0f, std::floor(corr(beta_fast)));
    high = std::min(static_cast<float>(n_rot - 1), std::ceil(corr(beta_slow)));
  }
  p->extra[0] = present(n.src[2]) ? 1 : 0;
  p->extra[1] = fbits(std::pow(base, -2.0f / n_rot));
  p->extra[2] = fbits(low);
  p->extra[3] = fbits(high);
  p->extra[4] = fbits(1.0f + 0.1f * std::log(1.0f / freq_scale));
}

// MUL_MAT with more than kMatvecCols columns (prefill): a tiled GEMM, one
// workgroup per output tile. On tensor cores (mul_mat_cm.comp: 128 weight rows
// x 64 columns, or x 128 columns for more than 64) where the device has
// cooperative matrices and rounding the weights to F16 stays within their
// tolerance (F16 and the block types); otherwise in float32 (mul_mat_mm.comp,
// 64 x 64).
constexpr uint64_t kTile = 64;     // BM = BN in shaders/mul_mat_mm.comp
constexpr uint64_t kCmRows = 128;  // BM in shaders/mul_mat_cm.comp
constexpr int64_t kCmCols = 64;    // its BN, or 2 · kCmCols past kCmCols columns
uint64_t tile_count(const pi_tensor& d, uint64_t rows, uint64_t cols) {
  return ((static_cast<uint64_t>(d.ne[0]) + rows - 1) / rows) *
         ((static_cast<uint64_t>(d.ne[1]) + cols - 1) / cols) *
         static_cast<uint64_t>(d.ne[2] * d.ne[3]);
}
void plan_mul_mat(const pi_node& n, const Features& features, OpPlan* p) {
  const pi_tensor& d = n.dst;
  if (d.ne[1] <= kMatvecCols) {
    plan_matvec(n, features, p);
    return;
  }
  const uint32_t type = n.src[0].type;
  if (features.coopmat && type != kF32 && type != kBF16) {
    const bool wide = d.ne[1] > kCmCols;  // CM_BN = 128
    *p = {wide ? "mul_mat_cm_n128" : "mul_mat_cm",
          {type, 0, 0, 0},
          3,
          tile_count(d, kCmRows, wide ? 2 * kCmCols : kCmCols),
          {}};
    return;
  }
  *p = {"mul_mat_mm", {type, 0, 0, 0}, 3, tile_count(d, kTile, kTile), {}};
}

// FLASH_ATTN of a prompt (more than 8 query tokens) with D dividing the
// workgroup of 128 (D <= 128) takes shaders/flash_attn_tiled.comp: a workgroup
// per 16 tokens and head, K/V rows shared by the 16 (its shared arrays:
// kAttnTiledShared bytes). Fewer tokens, other D and devices with less shared
// memory take flash_attn.comp, a workgroup per token and head.
constexpr int64_t kAttnTileTokens = 16;
constexpr uint32_t kAttnTiledShared = (16 * 129 + 32 * 129 + 16 * 32 + 2 * 128 + 16 + 2) * 4;
bool tiled_attn(int64_t d, int64_t tokens, const Features& features) {
  return tokens > 8 && (d == 32 || d == 64 || d == 128) && features.max_shared >= kAttnTiledShared;
}

}  // namespace

uint64_t tensor_extent(const pi_tensor& t) {
  TypeInfo ti{1, 4};
  type_info(t.type, &ti);
  uint64_t last = (static_cast<uint64_t>(t.ne[0]) / ti.block - 1) * t.nb[0] + ti.bytes;
  for (int d = 1; d < 4; ++d) last += static_cast<uint64_t>(t.ne[d] - 1) * t.nb[d];
  return last;
}

uint32_t attn_decode_splits(int64_t tokens, int64_t heads, int64_t n_kv) {
  constexpr uint64_t kPositions = 128, kGroups = 256, kMost = 16;
  const uint64_t rows = static_cast<uint64_t>(tokens * heads);
  const uint64_t by_grid = std::clamp<uint64_t>(std::bit_floor(kGroups / rows), 1, kMost);
  const uint64_t by_cache =
      std::bit_ceil((static_cast<uint64_t>(n_kv) + kPositions - 1) / kPositions);
  return static_cast<uint32_t>(std::min(by_grid, by_cache));
}

bool attn_vec_shape(const pi_node& n) {
  constexpr int64_t kVecTokens = 8;
  const int64_t d = n.src[0].ne[0];
  const uint32_t kv = n.src[1].type;
  return n.op == PI_OP_FLASH_ATTN && n.src[0].ne[1] <= kVecTokens && d >= 32 && d <= 256 &&
         ((kv == kF16 && d % 8 == 0) || (kv == kQ8_0 && d % 32 == 0));
}

uint32_t attn_vec_alignment(const pi_node& n) {
  return n.src[1].type == kQ8_0 ? 2 : 16;
}

uint32_t attn_node_splits(const pi_node& n) {
  if (!attn_vec_shape(n)) return 1;
  return attn_decode_splits(n.src[0].ne[1], n.src[0].ne[2], n.src[1].ne[1]);
}

bool plan_node(const pi_node& n, const Features& features, OpPlan* p, std::string* why) {
  *p = OpPlan{};
  const pi_tensor &s0 = n.src[0], &s1 = n.src[1], &s2 = n.src[2], &s3 = n.src[3], &d = n.dst;
  if (n.op >= PI_OP_COUNT) return fail(why, "unknown op");
  for (uint32_t i = 0; i < n.n_src && i < PI_MAX_SRC; ++i)
    if (present(n.src[i]) && !fits32(n.src[i]))
      return fail(why, "a source exceeds 32-bit indexing");
  if (!fits32(d)) return fail(why, "the destination exceeds 32-bit indexing");
  switch (n.op) {
    case PI_OP_GET_ROWS:
      if (!is_weight_type(s0.type) || !row_contiguous(s0)) return fail(why, "table type");
      if (s0.ne[2] != 1 || s0.ne[3] != 1 || s1.type != kI32 || s1.nb[0] != 4 || s1.ne[2] != 1 ||
          s1.ne[3] != 1 || !f32_rows(d) || d.ne[0] != s0.ne[0] || d.ne[1] != s1.ne[0] ||
          d.ne[2] != s1.ne[1] || d.ne[3] != 1)
        return fail(why, "shapes");
      *p = {"get_rows", {s0.type}, 1, elementwise_groups(d), {}};
      return true;
    case PI_OP_RMS_NORM:
    case PI_OP_NORM:
      if (!f32_rows(s0) || !f32_rows(d) || !same_shape(s0, d)) return fail(why, "F32 rows only");
      *p = {features.subgroup_arith ? "norm_subgroup" : "norm",
            {},
            0,
            static_cast<uint64_t>(nrows(s0)),
            {}};
      p->extra[0] = n.op == PI_OP_NORM ? 1 : 0;
      return true;
    case PI_OP_MUL_MAT:
      if (!is_weight_type(s0.type) || !row_contiguous(s0)) return fail(why, "weight type");
      if (!f32_rows(s1) || !f32_rows(d) || s1.ne[0] != s0.ne[0] || d.ne[0] != s0.ne[1] ||
          d.ne[1] != s1.ne[1] || d.ne[2] != s1.ne[2] || d.ne[3] != s1.ne[3] ||
          s1.ne[2] % s0.ne[2] != 0 || s1.ne[3] % s0.ne[3] != 0)
        return fail(why, "shapes");
      plan_mul_mat(n, features, p);
      return true;
    case PI_OP_ADD:
    case PI_OP_MUL:
      if (!f32_rows(s0) || !f32_rows(s1) || !f32_rows(d) || !same_shape(s0, d))
        return fail(why, "F32 rows only");
      for (int i = 0; i < 4; ++i)
        if (s0.ne[i] % s1.ne[i] != 0) return fail(why, "src1 does not broadcast");
      *p = {"binary", {}, 0, elementwise_groups(d), {}};
      p->extra[0] = n.op == PI_OP_ADD ? 0 : 1;
      return true;
    case PI_OP_SWIGLU:
      if (!f32_rows(s0) || !f32_rows(s1) || !f32_rows(d) || !same_shape(s0, d) ||
          !same_shape(s1, d))
        return fail(why, "F32 rows of one shape only");
      *p = {"binary", {}, 0, elementwise_groups(d), {}};
      p->extra[0] = 2;
      return true;
    case PI_OP_SCALE:
    case PI_OP_SILU:
    case PI_OP_GELU:
      if (!f32_rows(s0) || !f32_rows(d) || !same_shape(s0, d)) return fail(why, "F32 rows only");
      *p = {"unary", {}, 0, elementwise_groups(d), {}};
      p->extra[0] = n.op == PI_OP_SCALE ? 0 : n.op == PI_OP_SILU ? 1 : 2;
      return true;
    case PI_OP_ROPE:
      if (!f32_rows(s0) || !f32_rows(d) || !same_shape(s0, d) || s0.ne[3] != 1)
        return fail(why, "F32 [D,H,T] only");
      if (s1.type != kI32 || s1.nb[0] != 4 || s1.ne[0] != s0.ne[2]) return fail(why, "positions");
      if (n.i[1] <= 0 || n.i[1] % 2 != 0 || n.i[1] > s0.ne[0] || (n.i[0] != 0 && n.i[0] != 2))
        return fail(why, "mode or n_rot");
      if (present(s2) && (!f32_rows(s2) || s2.ne[0] < n.i[1] / 2)) return fail(why, "freq factors");
      *p = {"rope", {}, 0, elementwise_groups(d), {}};
      rope_extra(n, p);
      return true;
    case PI_OP_SOFT_MAX:
      if (!f32_rows(s0) || !f32_rows(d) || !same_shape(s0, d)) return fail(why, "F32 rows only");
      if (present(s1) && (!f32_rows(s1) || s1.ne[0] != s0.ne[0] || s1.ne[1] < s0.ne[1]))
        return fail(why, "mask shape");
      *p = {"soft_max", {}, 0, static_cast<uint64_t>(nrows(s0)), {}};
      p->extra[0] = present(s1) ? 1 : 0;
      return true;
    case PI_OP_FLASH_ATTN: {
      const int64_t dd = s0.ne[0], t = s0.ne[1], h = s0.ne[2];
      const bool kv_ok = (s1.type == kF32 || s1.type == kF16 || s1.type == kQ8_0) &&
                         s2.type == s1.type && row_contiguous(s1) && row_contiguous(s2);
      if (!f32_rows(s0) || !kv_ok || !f32_rows(d)) return fail(why, "types (K/V F32, F16, Q8_0)");
      if (dd > 256) return fail(why, "head size above 256");
      if (s1.ne[0] != dd || s2.ne[0] != dd || s2.ne[1] != s1.ne[1] || s2.ne[2] != s1.ne[2] ||
          h % s1.ne[2] != 0 || s0.ne[3] != 1 || s1.ne[3] != 1 || d.ne[0] != dd || d.ne[1] != h ||
          d.ne[2] != t)
        return fail(why, "shapes");
      if (present(s3) && (!f32_rows(s3) || s3.ne[0] != s1.ne[1] || s3.ne[1] < t))
        return fail(why, "mask shape");
      if (tiled_attn(dd, t, features)) {
        const uint64_t blocks = (static_cast<uint64_t>(t) + kAttnTileTokens - 1) / kAttnTileTokens;
        *p = {"flash_attn_tiled", {s1.type}, 1, blocks * static_cast<uint64_t>(h), {}};
      } else {
        *p = {"flash_attn", {s1.type}, 1, static_cast<uint64_t>(t * h), {}};
        p->extra[1] = attn_node_splits(n);  // flash_attn_vec.comp's (vk_graph_plan.cpp)
      }
      p->extra[0] = present(s3) ? 1 : 0;
      return true;
    }
    case PI_OP_CPY: {
      auto convertible = [](uint32_t t) {
        return t == kF32 || t == kF16 || t == kBF16 || t == kQ8_0;
      };
      if (!convertible(s0.type) || !convertible(d.type) || !same_shape(s0, d) ||
          !row_contiguous(s0) || !row_contiguous(d))
        return fail(why, "types (F32, F16, BF16, Q8_0) or strides");
      const uint64_t items = d.type == kQ8_0 ? nelem(d) / 32 : nelem(d);
      *p = {"cpy", {s0.type, d.type}, 2, (items + 63) / 64, {}};
      return true;
    }
    case PI_OP_ARGMAX:
      if (!f32_rows(s0) || d.type != kI32 || d.nb[0] != 4 || d.ne[0] != nrows(s0) || nrows(d) != 1)
        return fail(why, "F32 rows -> I32 only");
      *p = {"argmax", {}, 0, static_cast<uint64_t>(nrows(s0)), {}};
      return true;
    default:
      return fail(why, "unknown op");
  }
}

}  // namespace polyinfer::vk
