// Checks the arguments of quantize_row/dequantize_row and routes them to the
// per-type kernel.
#include <string>

#include "core/quant_kernels.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer {
namespace {

using DequantizeFn = void (*)(const void*, float*, int64_t);
using QuantizeFn = void (*)(const float*, void*, int64_t);

DequantizeFn dequantizer(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
      return quant::dequantize_f32;
    case GgmlType::F16:
      return quant::dequantize_f16;
    case GgmlType::BF16:
      return quant::dequantize_bf16;
    case GgmlType::Q4_0:
      return quant::dequantize_q4_0;
    case GgmlType::Q4_1:
      return quant::dequantize_q4_1;
    case GgmlType::Q5_0:
      return quant::dequantize_q5_0;
    case GgmlType::Q5_1:
      return quant::dequantize_q5_1;
    case GgmlType::Q8_0:
      return quant::dequantize_q8_0;
    case GgmlType::Q2_K:
      return quant::dequantize_q2_k;
    case GgmlType::Q3_K:
      return quant::dequantize_q3_k;
    case GgmlType::Q4_K:
      return quant::dequantize_q4_k;
    case GgmlType::Q5_K:
      return quant::dequantize_q5_k;
    case GgmlType::Q6_K:
      return quant::dequantize_q6_k;
    default:
      return nullptr;
  }
}

QuantizeFn quantizer(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
      return quant::quantize_f32;
    case GgmlType::F16:
      return quant::quantize_f16;
    case GgmlType::BF16:
      return quant::quantize_bf16;
    case GgmlType::Q4_0:
      return quant::quantize_q4_0;
    case GgmlType::Q4_1:
      return quant::quantize_q4_1;
    case GgmlType::Q5_0:
      return quant::quantize_q5_0;
    case GgmlType::Q5_1:
      return quant::quantize_q5_1;
    case GgmlType::Q8_0:
      return quant::quantize_q8_0;
    case GgmlType::Q4_K:
      return quant::quantize_q4_k;
    case GgmlType::Q5_K:
      return quant::quantize_q5_k;
    case GgmlType::Q6_K:
      return quant::quantize_q6_k;
    default:
      return nullptr;
  }
}

// The type table (dtype.cpp) is the single statement of support; a kernel
// missing for a type it marks supported is a programming error, reported as such.
template <typename Fn>
Fn checked_kernel(GgmlType type, int64_t n, bool supported, Fn fn, const char* what) {
  const TypeTraits& t = traits(type);
  if (!supported || fn == nullptr) {
    throw Error(ErrorCode::kUnsupported,
                "no reference " + std::string(what) + " for type " + std::string(t.name));
  }
  if (n < 0 || n % t.block_size != 0) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " of " + std::to_string(n) +
                                                 " elements: not a multiple of the " +
                                                 std::string(t.name) + " block size " +
                                                 std::to_string(t.block_size));
  }
  return fn;
}

}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const DequantizeFn fn =
      checked_kernel(type, n, traits(type).dequantizable, dequantizer(type), "dequantize");
  fn(src, dst, n);
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const QuantizeFn fn =
      checked_kernel(type, n, traits(type).quantizable, quantizer(type), "quantize");
  fn(src, dst, n);
}

}  // namespace polyinfer
