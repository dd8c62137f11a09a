// CPY: copy with type conversion between tensors of the same shape and any
// strides; how K and V enter the KV cache (F32 -> F16/BF16/Q8_0) and how a
// cache view is read back as F32.
#include <vector>

#include "backends/cpu/tensor_rows.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer::cpu {
namespace {

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

void run_cpy(const OpContext& ctx) {
  const pi_tensor &s = ctx.node.src[0], &d = ctx.node.dst;
  const int64_t k = s.ne[0];
  float* tmp = reinterpret_cast<float*>(ctx.work.data()) + k * ctx.ith;
  const Range rows = split_range(nrows(s), ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const RowIndex ri = unflatten(s, r);
    const uint8_t* in = row_ptr(s, ri);
    uint8_t* out = row_ptr(d, ri);
    float* f = d.type == kTypeF32 ? reinterpret_cast<float*>(out) : tmp;
    dequantize_row(static_cast<GgmlType>(s.type), in, f, k);
    if (d.type != kTypeF32) quantize_row(static_cast<GgmlType>(d.type), f, out, k);
  }
}

}  // namespace

const OpImpl kOpCpy{supports_cpy, cpy_work, run_cpy};

}  // namespace polyinfer::cpu
