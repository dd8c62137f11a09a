// GET_ROWS: embedding lookup. Rows of any stored type are dequantized on the
// fly, so the token embedding stays in its GGUF block format; F16 rows (a
// common embedding type) convert with vector instructions, F32 rows are copied.
// The quantized types the CPU matmul engines unpack (matmul/weight_formats-inl.h)
// decode with vector instructions too: a decode step's one embedding row had
// taken 9-12 us in the scalar reference (a Q6_K row of 2,048 values), time in
// which a GPU waits for its next token. The values are the reference's bits:
// scale · (code − offset) (+ min) in float32 as dequantize_row computes them.
#include <cstring>

#include "backends/cpu/tensor_rows.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/quant.hpp"

// clang-format off
// Highway's per-target compilation needs this order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/ops_get_rows.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "backends/cpu/simd/row_convert-inl.h"
#include "backends/cpu/matmul/weight_formats-inl.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {

void GetRowF16(const uint16_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t n) {
  F16ToF32Row(src, dst, n);
}

#if HWY_TARGET != HWY_SCALAR
// k values (whole blocks) of a W-format row at src into dst.
template <class W>
void DecodeRow(const uint8_t* HWY_RESTRICT src, float* HWY_RESTRICT dst, int64_t k) {
  // At most 16 lanes: a vector never straddles two groups (kGroup >= 16).
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  constexpr int kGroups = W::kBlock / W::kGroup;
  const int n = static_cast<int>(hn::Lanes(df));
  HWY_ALIGN uint8_t codes[W::kBlock];
  float scale[kGroups], min[kGroups];
  const auto offset = hn::Set(df, static_cast<float>(W::kOffset));
  for (int64_t b = 0; b < k / W::kBlock; ++b) {
    W::Unpack(src + b * sizeof(typename W::Block), codes, scale, min, 1);
    float* y = dst + b * W::kBlock;
    for (int e = 0; e < W::kBlock; e += n) {
      const auto u =
          hn::ConvertTo(df, hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, codes + e))));
      auto v = hn::Mul(hn::Set(df, scale[e / W::kGroup]), hn::Sub(u, offset));
      if constexpr (W::kHasMin) v = hn::Add(v, hn::Set(df, min[e / W::kGroup]));
      hn::StoreU(v, df, y + e);
    }
  }
}

// DecodeRow<W> for the W of the formats Ws whose type is `type`; false when none is.
template <class... Ws>
bool DecodeRowOf(uint32_t type, const uint8_t* src, float* dst, int64_t k) {
  return ((type == static_cast<uint32_t>(Ws::kType) && (DecodeRow<Ws>(src, dst, k), true)) || ...);
}
#endif

// False where this target has no vector decode of `type` (the caller then
// uses the reference).
bool GetRowQuant(uint32_t type, const uint8_t* HWY_RESTRICT src, float* HWY_RESTRICT dst,
                 int64_t k) {
#if HWY_TARGET == HWY_SCALAR
  (void)type, (void)src, (void)dst, (void)k;
  return false;
#else
  return DecodeRowOf<WeightQ4_0, WeightQ4_1, WeightQ5_0, WeightQ5_1, WeightQ8_0, WeightQ2_K,
                     WeightQ3_K, WeightQ4_K, WeightQ5_K, WeightQ6_K>(type, src, dst, k);
#endif
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {
namespace {

HWY_EXPORT(GetRowF16);
HWY_EXPORT(GetRowQuant);

bool supports_get_rows(const pi_node& n) {
  const pi_tensor &table = n.src[0], &ids = n.src[1];
  const auto tt = type_traits(table.type);
  return tt && tt->dequantizable && table.ne[0] % tt->block_size == 0 && table.ne[2] == 1 &&
         table.ne[3] == 1 && ids.type == kTypeI32 && ids.nb[0] == 4 && ids.ne[2] == 1 &&
         ids.ne[3] == 1 && is_f32_rows(n.dst) && n.dst.ne[0] == table.ne[0] &&
         n.dst.ne[1] == ids.ne[0] && n.dst.ne[2] == ids.ne[1];
}

size_t no_work(const pi_node&, int) {
  return 0;
}

void decode_row(uint32_t type, const uint8_t* row, float* out, int64_t k) {
  if (type == kTypeF32) {
    std::memcpy(out, row, static_cast<size_t>(k) * 4);
  } else if (type == kTypeF16) {
    HWY_DYNAMIC_DISPATCH(GetRowF16)(reinterpret_cast<const uint16_t*>(row), out, k);
  } else if (!HWY_DYNAMIC_DISPATCH(GetRowQuant)(type, row, out, k)) {
    dequantize_row(static_cast<GgmlType>(type), row, out, k);
  }
}

void run_get_rows(const OpContext& ctx) {
  const pi_tensor &table = ctx.node.src[0], &ids = ctx.node.src[1], &dst = ctx.node.dst;
  const int64_t n = ids.ne[0] * ids.ne[1];
  const Range rows = split_range(n, ctx.ith, ctx.nth);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
    const int64_t i0 = r % ids.ne[0], i1 = r / ids.ne[0];
    const int32_t id = *reinterpret_cast<const int32_t*>(row_ptr(ids, i1, 0, 0) + i0 * 4);
    // Out-of-range ids were rejected by the model (token ids < n_vocab); clamp
    // anyway so a bad id can never read outside the table.
    const int64_t row = id < 0 ? 0 : (id >= table.ne[1] ? table.ne[1] - 1 : id);
    decode_row(table.type, row_ptr(table, row, 0, 0),
               reinterpret_cast<float*>(row_ptr(dst, i0, i1, 0)), table.ne[0]);
  }
}

}  // namespace

const OpImpl kOpGetRows{supports_get_rows, no_work, run_get_rows};

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
