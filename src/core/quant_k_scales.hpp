// Helpers shared by the K-quant kernels (dequantize and quantize).
#pragma once

#include <cstdint>
#include <cstring>

namespace polyinfer::quant {

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block,
// packed in scales[12] as ggml's get_scale_min_k4 reads them:
//   bytes 0-3: scales 0-3 in bits 0-5, high 2 bits of scales 4-7 in bits 6-7
//   bytes 4-7: mins 0-3 in bits 0-5, high 2 bits of mins 4-7 in bits 6-7
//   bytes 8-11: low 4 bits of scale 4+k (bits 0-3) and of min 4+k (bits 4-7)
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};

inline ScaleMin get_scale_min_k4(int j, const uint8_t* scales) {
  if (j < 4) {
    return {static_cast<uint8_t>(scales[j] & 63), static_cast<uint8_t>(scales[j + 4] & 63)};
  }
  return {static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))};
}

// ggml's nearest_int: adding 1.5 * 2^23 makes the FPU round to an integer
// (ties to even) in the low mantissa bits. Valid for |x| < 2^22, which the
// callers guarantee for finite inputs.
inline int nearest_int(float x) {
  const float shifted = x + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007FFFFF) - 0x00400000;
}

}  // namespace polyinfer::quant
