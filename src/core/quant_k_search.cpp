#include "core/quant_k_search.hpp"

#include <algorithm>
#include <cmath>

#include "core/quant_k_scales.hpp"

namespace polyinfer::quant {
namespace {

// ggml's GROUP_MAX_EPS: a sub-block this small is treated as all zeros.
constexpr float kGroupMaxEps = 1e-15f;

int clamp_code(int l, int lo, int hi) {
  return std::max(lo, std::min(hi, l));
}

// Weighted squared error of the reconstruction scale * L + offset.
float weighted_error(const float* x, const float* w, const uint8_t* L, int n, float scale,
                     float offset) {
  float error = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = scale * L[i] + offset - x[i];
    error += w[i] * (diff * diff);
  }
  return error;
}

}  // namespace

ScaleAndMin search_scale_min(const float* x, const float* w, int n, const AsymmetricSearch& p,
                             uint8_t* L) {
  float min = x[0];
  float max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  // The offset only ever subtracts: a block of positives keeps min = 0.
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    return {0.0f, -min};
  }
  // Start from the plain min/max grid.
  float iscale = p.nmax / (max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_code(nearest_int(iscale * (x[i] - min)), 0, p.nmax));
  }
  float best_error = weighted_error(x, w, L, n, scale, min);

  // Each trial grid gets its least-squares scale and offset (offset clamped to
  // <= 0); the one with the smallest weighted error wins.
  uint8_t trial[kMaxSubBlock];
  for (int is = 0; is <= p.nstep; ++is) {
    iscale = (p.rmin + p.rdelta * is + p.nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_code(nearest_int(iscale * (x[i] - min)), 0, p.nmax);
      trial[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float error = weighted_error(x, w, trial, n, this_scale, this_min);
    if (error < best_error) {
      std::copy(trial, trial + n, L);
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  return {scale, -min};
}

float search_symmetric_scale(const float* x, int n, int nmax, int8_t* L) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  // Sums of the least-squares fit for inverse scale iscale, weights x^2.
  auto fit = [&](float iscale, float& sumlx, float& suml2) {
    sumlx = 0;
    suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_code(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
  };
  auto store_codes = [&](float iscale) {
    for (int i = 0; i < n; ++i) {
      L[i] = static_cast<int8_t>(nmax + clamp_code(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    }
  };

  float iscale = -nmax / max;
  float sumlx, suml2;
  fit(iscale, sumlx, suml2);
  store_codes(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  // Maximising sumlx^2 / suml2 minimises the weighted squared error.
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    fit(iscale, sumlx, suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      store_codes(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace polyinfer::quant
