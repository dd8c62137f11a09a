// CPY: copy with type conversion between tensors of the same shape and any
// strides; how K and V enter the KV cache (F32 -> F16/BF16/Q8_0) and how a
// cache view is read back as F32. F32 <-> F16 rows (the default KV cache)
// convert with vector instructions; the other pairs go through the reference
// conversions of polyinfer/quant.hpp.
#include <cstring>

#include "backends/cpu/tensor_rows.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant.hpp"

// clang-format off
// Highway's per-target compilation needs this order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/ops_cpy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "backends/cpu/simd/row_convert-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {

void CpyF32ToF16(const float* HWY_RESTRICT src, uint16_t* HWY_RESTRICT dst, int64_t n) {
  F32ToF16Row(src, dst, n);
}

void CpyF16ToF32(const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n) {
  F16ToF32Row(src, dst, n);
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {
namespace {

HWY_EXPORT(CpyF32ToF16);
HWY_EXPORT(CpyF16ToF32);

bool plain_or_q8(uint32_t type) {
  return type == kTypeF32 || type == kTypeF16 || type == kTypeBF16 || type == kTypeQ8_0;
}

bool row_contiguous(const pi_tensor& t) {
  const TypeTraits& tt = traits(static_cast<GgmlType>(t.type));
  return t.nb[0] == tt.type_size && t.ne[0] % tt.block_size == 0;
}

bool supports_cpy(const pi_node& n) {
  const pi_tensor &s = n.src[0], &d = n.dst;
  return plain_or_q8(s.type) && plain_or_q8(d.type) && same_shape(s, d) && row_contiguous(s) &&
         row_contiguous(d);
}

// A row of F32 per thread for the conversion through F32.
size_t cpy_work(const pi_node& n, int nth) {
  return static_cast<size_t>(n.src[0].ne[0]) * 4 * nth;
}

// One row of k elements from `in` (type s) to `out` (type d), through `tmp`
// (k floats) when neither side is F32.
void convert_row(uint32_t s, uint32_t d, const uint8_t* in, uint8_t* out, float* tmp, int64_t k) {
  if (s == d) {
    std::memcpy(out, in, row_size(static_cast<GgmlType>(s), k));
  } else if (s == kTypeF32 && d == kTypeF16) {
    HWY_DYNAMIC_DISPATCH(CpyF32ToF16)
    (reinterpret_cast<const float*>(in), reinterpret_cast<uint16_t*>(out), k);
  } else if (s == kTypeF16 && d == kTypeF32) {
    HWY_DYNAMIC_DISPATCH(CpyF16ToF32)
    (reinterpret_cast<const uint16_t*>(in), reinterpret_cast<float*>(out), k);
  } else {
    float* f = d == kTypeF32 ? reinterpret_cast<float*>(out) : tmp;
    dequantize_row(static_cast<GgmlType>(s), in, f, k);
    if (d != kTypeF32) quantize_row(static_cast<GgmlType>(d), f, out, k);
  }
}

void run_cpy(const OpContext& ctx) {
  const pi_tensor &s = ctx.node.src[0], &d = ctx.node.dst;
  const int64_t k = s.ne[0];
  float* tmp = reinterpret_cast<float*>(ctx.work.data()) + k * ctx.ith;
  const Range rows = split_range(nrows(s), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(s, r);
    convert_row(s.type, d.type, row_ptr(s, ri), row_ptr(d, ri), tmp, k);
  }
}

}  // namespace

const OpImpl kOpCpy{supports_cpy, cpy_work, run_cpy};

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
