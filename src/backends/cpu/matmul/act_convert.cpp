// F32 activation rows to the int8 rows of act_rows.hpp (per-block absmax
// scale, round to nearest), per Highway target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul/act_convert.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstring>

#include "backends/cpu/matmul/act_rows.hpp"
#include "backends/cpu/matmul/kernel_entries.hpp"

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Codes of one block of `len` floats (32 or 256: a multiple of every vector
// length); returns the block's scale d = max|x| / 127. |x| * 127 / max rounds
// to at most 127, so the int8 codes never saturate.
float QuantizeBlock(const float* x, int8_t* q, int len) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const int n = static_cast<int>(hn::Lanes(df));
  auto amax = hn::Zero(df);
  for (int i = 0; i < len; i += n) amax = hn::Max(amax, hn::Abs(hn::LoadU(df, x + i)));
  const float max = hn::GetLane(hn::MaxOfLanes(df, amax));
  const auto inv = hn::Set(df, max > 0.0f ? 127.0f / max : 0.0f);
  for (int i = 0; i < len; i += n) {
    const auto codes = hn::NearestInt(hn::Mul(hn::LoadU(df, x + i), inv));
    hn::StoreU(hn::DemoteTo(di8, codes), di8, q + i);
  }
  return max / 127.0f;
}

void ConvertAct(const float* x, void* y, int64_t k, int block) {
  const ActLayout l = act_layout(k, block);
  auto* row = static_cast<uint8_t*>(y);
  auto* qs = reinterpret_cast<int8_t*>(row);
  auto* d = reinterpret_cast<float*>(row + l.d);
  for (int64_t b = 0; b < k / block; ++b)
    d[b] = QuantizeBlock(x + b * block, qs + b * block, block);
  auto* isum16 = reinterpret_cast<int32_t*>(row + l.isum16);
  auto* fsum16 = reinterpret_cast<float*>(row + l.fsum16);
  for (int64_t g = 0; g < k / 16; ++g) {
    int32_t s = 0;
    for (int j = 0; j < 16; ++j) s += qs[16 * g + j];
    isum16[g] = s;
    fsum16[g] = static_cast<float>(s);
  }
  auto* isum32 = reinterpret_cast<int32_t*>(row + l.isum32);
  auto* fsum32 = reinterpret_cast<float*>(row + l.fsum32);
  for (int64_t g = 0; g < k / 32; ++g) {
    isum32[g] = isum16[2 * g] + isum16[2 * g + 1];
    fsum32[g] = static_cast<float>(isum32[g]);
  }
  const size_t used = l.fsum32 + 4 * static_cast<size_t>(k / 32);
  std::memset(row + used, 0, l.bytes - used);
}

void ConvertActQ8(const float* x, void* y, int64_t k) {
  ConvertAct(x, y, k, kActBlockLegacy);
}
void ConvertActQ8K(const float* x, void* y, int64_t k) {
  ConvertAct(x, y, k, kActBlockK);
}

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {

HWY_EXPORT(ConvertActQ8);
HWY_EXPORT(ConvertActQ8K);
HWY_EXPORT(TargetName);

void convert_act_q8(const float* x, void* y, int64_t k) {
  HWY_DYNAMIC_DISPATCH(ConvertActQ8)(x, y, k);
}
void convert_act_q8k(const float* x, void* y, int64_t k) {
  HWY_DYNAMIC_DISPATCH(ConvertActQ8K)(x, y, k);
}
const char* dispatched_target_name() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
