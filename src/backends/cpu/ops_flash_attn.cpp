// FLASH_ATTN: softmax(scale * q k^T + mask) v in one pass over the KV cache
// with the online softmax of Milakov & Gimelshein 2018 (as FlashAttention, Dao
// et al. 2022), never materialising the score matrix. GQA: query head h reads
// KV head h / (H / Hkv); the query heads of one KV head are done together so
// each K/V row is converted once.
#include <cmath>
#include <limits>

#include "backends/cpu/tensor_rows.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer::cpu {
namespace {

bool kv_type_ok(const pi_tensor& t) {
  if (t.type != kTypeF32 && t.type != kTypeF16 && t.type != kTypeQ8_0) return false;
  const TypeTraits& tt = traits(static_cast<GgmlType>(t.type));
  return t.nb[0] == tt.type_size && t.ne[0] % tt.block_size == 0;
}

bool supports_flash_attn(const pi_node& n) {
  const pi_tensor &q = n.src[0], &k = n.src[1], &v = n.src[2], &m = n.src[3], &o = n.dst;
  const int64_t d = q.ne[0], t = q.ne[1], h = q.ne[2];
  if (!is_f32_rows(q) || !kv_type_ok(k) || !kv_type_ok(v) || !is_f32_rows(o)) return false;
  if (k.ne[0] != d || v.ne[0] != d || v.ne[1] != k.ne[1] || v.ne[2] != k.ne[2]) return false;
  if (k.ne[2] <= 0 || h % k.ne[2] != 0 || q.ne[3] != 1 || k.ne[3] != 1) return false;
  if (o.ne[0] != d || o.ne[1] != h || o.ne[2] != t) return false;
  return !present(m) || (is_f32_rows(m) && m.ne[0] == k.ne[1] && m.ne[1] >= t);
}

int64_t group_size(const pi_node& n) {
  return n.src[0].ne[2] / n.src[1].ne[2];
}

// Per thread: accumulators [group][D], running max and sum [group], one K and
// one V row as F32.
size_t per_thread_floats(const pi_node& n) {
  const int64_t d = n.src[0].ne[0], g = group_size(n);
  return static_cast<size_t>(g * d + 2 * g + 2 * d);
}

size_t flash_attn_work(const pi_node& n, int nth) {
  return per_thread_floats(n) * 4 * nth;
}

struct Scratch {
  float *acc, *max, *sum, *krow, *vrow;
};

Scratch scratch_for(const OpContext& ctx) {
  const int64_t d = ctx.node.src[0].ne[0], g = group_size(ctx.node);
  float* base = reinterpret_cast<float*>(ctx.work.data()) + per_thread_floats(ctx.node) * ctx.ith;
  return {base, base + g * d, base + g * d + g, base + g * d + 2 * g, base + g * d + 2 * g + d};
}

float dot(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Query token t, KV head kvh: all query heads of the group at once.
void attend(const OpContext& ctx, const Scratch& s, int64_t t, int64_t kvh) {
  const pi_node& n = ctx.node;
  const pi_tensor &q = n.src[0], &k = n.src[1], &v = n.src[2], &m = n.src[3];
  const int64_t d = q.ne[0], g = group_size(n), n_kv = k.ne[1];
  const float scale = n.f[0];
  const float* mask = present(m) ? row_f32(m, {t, 0, 0}) : nullptr;
  for (int64_t j = 0; j < g; ++j) {
    s.max[j] = -std::numeric_limits<float>::infinity();
    s.sum[j] = 0;
    for (int64_t i = 0; i < d; ++i) s.acc[j * d + i] = 0;
  }
  for (int64_t p = 0; p < n_kv; ++p) {
    const float bias = mask ? mask[p] : 0.0f;
    if (bias == -std::numeric_limits<float>::infinity()) continue;
    dequantize_row(static_cast<GgmlType>(k.type), row_ptr(k, p, kvh, 0), s.krow, d);
    dequantize_row(static_cast<GgmlType>(v.type), row_ptr(v, p, kvh, 0), s.vrow, d);
    for (int64_t j = 0; j < g; ++j) {
      const float* qrow = row_f32(q, {t, kvh * g + j, 0});
      const float score = dot(qrow, s.krow, d) * scale + bias;
      float* acc = s.acc + j * d;
      if (score > s.max[j]) {
        const float correction = std::exp(s.max[j] - score);
        for (int64_t i = 0; i < d; ++i) acc[i] *= correction;
        s.sum[j] *= correction;
        s.max[j] = score;
      }
      const float w = std::exp(score - s.max[j]);
      for (int64_t i = 0; i < d; ++i) acc[i] += w * s.vrow[i];
      s.sum[j] += w;
    }
  }
  for (int64_t j = 0; j < g; ++j) {
    float* out = row_f32(n.dst, {kvh * g + j, t, 0});
    const float inv = s.sum[j] > 0 ? 1.0f / s.sum[j] : 0.0f;
    for (int64_t i = 0; i < d; ++i) out[i] = s.acc[j * d + i] * inv;
  }
}

void run_flash_attn(const OpContext& ctx) {
  const pi_node& n = ctx.node;
  const int64_t n_tokens = n.src[0].ne[1], n_kv_heads = n.src[1].ne[2];
  const Scratch s = scratch_for(ctx);
  const Range units = split_range(n_tokens * n_kv_heads, ctx.ith, ctx.nth);
  for (int64_t u = units.begin; u < units.end; ++u) attend(ctx, s, u / n_kv_heads, u % n_kv_heads);
}

}  // namespace

const OpImpl kOpFlashAttn{supports_flash_attn, flash_attn_work, run_flash_attn};

}  // namespace polyinfer::cpu
