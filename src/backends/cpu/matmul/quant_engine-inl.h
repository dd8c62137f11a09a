// Per-target (Highway foreach_target) GEMM of a quantized weight type W
// (weight_formats-inl.h) against int8 activation rows (act_rows.hpp). Per
// output element it computes
//   sum over activation blocks b of  d_act[b] * sum over groups g in b of
//     scale[g] * (dot(u, q)_g - kOffset * sum(q)_g) + min[g] * sum(q)_g
// with dot(u, q)_g the exact int32 dot of weight codes and activation codes:
// by the matrix-vector path (quant_decode-inl.h) for a few columns, by the
// register-blocked path (quant_panel-inl.h) for more.

#if defined(POLYINFER_MATMUL_QUANT_ENGINE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef POLYINFER_MATMUL_QUANT_ENGINE_INL_H_
#undef POLYINFER_MATMUL_QUANT_ENGINE_INL_H_
#else
#define POLYINFER_MATMUL_QUANT_ENGINE_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/quant_decode-inl.h"
#include "backends/cpu/matmul/quant_panel-inl.h"
#include "backends/cpu/matmul/weight_formats-inl.h"
#include "polyinfer/quant.hpp"

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {

#if HWY_TARGET != HWY_SCALAR

template <class W>
void GemmQuant(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  if (n_cols <= kDecodeMaxCols) {
    GemmDecode<W>(k, wb, w_stride, n_rows, ab, a_stride, n_cols, dst, dst_stride);
  } else {
    GemmPanel<W>(k, wb, w_stride, n_rows, ab, a_stride, n_cols, dst, dst_stride);
  }
}

#else  // HWY_SCALAR: CPUs without 128-bit SIMD, a correct fallback only

// Dequantized weights dotted in float with the activations as converted.
template <class W>
void GemmQuant(int64_t k, const void* w, size_t w_stride, int64_t n_rows, const void* a,
               size_t a_stride, int64_t n_cols, float* dst, size_t dst_stride) {
  const ActLayout layout = act_layout(k, W::kActBlock);
  std::vector<float> weights(static_cast<size_t>(k)), act(static_cast<size_t>(k));
  for (int64_t c = 0; c < n_cols; ++c) {
    const ActRow row = act_row(static_cast<const uint8_t*>(a) + c * a_stride, layout);
    for (int64_t e = 0; e < k; ++e) act[e] = row.d[e / W::kActBlock] * row.qs[e];
    for (int64_t r = 0; r < n_rows; ++r) {
      dequantize_row(W::kType, static_cast<const uint8_t*>(w) + r * w_stride, weights.data(), k);
      float sum = 0.0f;
      for (int64_t e = 0; e < k; ++e) sum += weights[e] * act[e];
      dst[c * dst_stride + r] = sum;
    }
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // POLYINFER_MATMUL_QUANT_ENGINE_INL_H_
