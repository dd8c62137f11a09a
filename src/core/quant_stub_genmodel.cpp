// TEMPORARY (branch genmodel only; delete at merge): quantize_row for the float
// types, so gen-model builds and its f32/f16/bf16 paths can be tested before the
// quantizers from the quant branch land.
#include <cstring>
#include <string>

#include "polyinfer/error.hpp"
#include "polyinfer/fp16.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer {

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  auto* out = static_cast<uint16_t*>(dst);
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) out[i] = fp32_to_fp16(src[i]);
      return;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) out[i] = fp32_to_bf16(src[i]);
      return;
    default:
      throw Error(ErrorCode::kUnsupported,
                  "quantize to " + std::string(type_name(type)) + " is not implemented yet");
  }
}

}  // namespace polyinfer
