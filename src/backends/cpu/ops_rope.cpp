// ROPE: rotary position embedding (Su et al. 2021, RoFormer) on x [D, H, T]
// with positions [T]. Mode 0 rotates adjacent pairs (2i, 2i+1), as GGUF llama
// files expect (convert_hf_to_gguf permutes Q/K for it); mode 2 (NeoX) rotates
// (i, i + n_rot/2), as qwen2. Optional per-frequency divisors (llama3
// rope_freqs) and YaRN scaling (Peng et al. 2023) follow ggml's rope_yarn.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "backends/cpu/tensor_rows.hpp"

namespace polyinfer::cpu {
namespace {

constexpr int kModeNeox = 2;

struct RopeParams {
  int mode, n_rot, n_ctx_orig;
  float base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
};

RopeParams params_of(const pi_node& n) {
  return {n.i[0], n.i[1], n.i[2], n.f[0], n.f[1], n.f[2], n.f[3], n.f[4], n.f[5]};
}

bool supports_rope(const pi_node& n) {
  const pi_tensor &x = n.src[0], &pos = n.src[1], &ff = n.src[2];
  const RopeParams p = params_of(n);
  if (!is_f32_rows(x) || !is_f32_rows(n.dst) || !same_shape(x, n.dst) || x.ne[3] != 1) return false;
  if (pos.type != kTypeI32 || pos.nb[0] != 4 || pos.ne[0] != x.ne[2]) return false;
  if (p.n_rot <= 0 || p.n_rot % 2 != 0 || p.n_rot > x.ne[0] ||
      (p.mode != 0 && p.mode != kModeNeox)) {
    return false;
  }
  return !present(ff) || (is_f32_rows(ff) && ff.ne[0] >= p.n_rot / 2);
}

size_t rope_work(const pi_node& n, int nth) {
  return static_cast<size_t>(n.i[1]) * 4 * nth;
}

// The dimension index below which YaRN extrapolates and above which it
// interpolates, for a given number of rotations over the original context.
float corr_dim(const RopeParams& p, float n_rotations) {
  return p.n_rot * std::log(p.n_ctx_orig / (n_rotations * 2 * std::numbers::pi_v<float>)) /
         (2 * std::log(p.base));
}

// cos/sin for each of the n_rot/2 frequencies at position pos, interleaved.
void rope_cache(const RopeParams& p, const float* freq_factors, int32_t pos, float* cs) {
  const float theta_scale = std::pow(p.base, -2.0f / p.n_rot);
  float low = 0, high = 0;
  if (p.ext_factor != 0.0f) {
    low = std::max(0.0f, std::floor(corr_dim(p, p.beta_fast)));
    high = std::min(static_cast<float>(p.n_rot - 1), std::ceil(corr_dim(p, p.beta_slow)));
  }
  float theta_base = static_cast<float>(pos);
  for (int i = 0; i < p.n_rot / 2; ++i, theta_base *= theta_scale) {
    const float extrap = theta_base / (freq_factors ? freq_factors[i] : 1.0f);
    float theta = p.freq_scale * extrap;
    float mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
      const float y = (i - low) / std::max(0.001f, high - low);
      const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
      theta = theta * (1 - mix) + extrap * mix;
      mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
    }
    cs[2 * i] = std::cos(theta) * mscale;
    cs[2 * i + 1] = std::sin(theta) * mscale;
  }
}

void rotate_row(const RopeParams& p, const float* cs, const float* in, float* out, int64_t d) {
  const int half = p.n_rot / 2;
  for (int i = 0; i < half; ++i) {
    const int a = p.mode == kModeNeox ? i : 2 * i;
    const int b = p.mode == kModeNeox ? i + half : 2 * i + 1;
    const float x0 = in[a], x1 = in[b];
    out[a] = x0 * cs[2 * i] - x1 * cs[2 * i + 1];
    out[b] = x0 * cs[2 * i + 1] + x1 * cs[2 * i];
  }
  for (int64_t i = p.n_rot; i < d; ++i) out[i] = in[i];
}

void run_rope(const OpContext& ctx) {
  const pi_node& n = ctx.node;
  const RopeParams p = params_of(n);
  const pi_tensor& x = n.src[0];
  const int32_t* pos = reinterpret_cast<const int32_t*>(tensor_data(n.src[1]));
  const float* ff =
      present(n.src[2]) ? reinterpret_cast<const float*>(tensor_data(n.src[2])) : nullptr;
  float* cs = reinterpret_cast<float*>(ctx.work.data()) + static_cast<int64_t>(p.n_rot) * ctx.ith;
  const Range tokens = split_range(x.ne[2], ctx.ith, ctx.nth);
  for (int64_t t = tokens.begin; t < tokens.end; ++t) {
    rope_cache(p, ff, pos[t], cs);
    for (int64_t h = 0; h < x.ne[1]; ++h) {
      rotate_row(p, cs, row_f32(x, {h, t, 0}), row_f32(n.dst, {h, t, 0}), x.ne[0]);
    }
  }
}

}  // namespace

const OpImpl kOpRope{supports_rope, rope_work, run_rope};

}  // namespace polyinfer::cpu
