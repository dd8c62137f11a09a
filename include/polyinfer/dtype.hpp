// ggml tensor types as GGUF files store them (type ids from ggml.h / gguf-py
// constants.py GGMLQuantizationType). A "block" is the unit of a quantized
// type: block_size elements stored in type_size bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace polyinfer {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct TypeTraits {
  std::string_view name;  // ggml's name, e.g. "Q4_K"
  int64_t block_size;     // elements per block (1 for plain types)
  size_t type_size;       // bytes per block
  bool dequantizable;     // polyinfer has a reference dequantize for it
  bool quantizable;       // polyinfer has a reference quantize for it
};

// Traits of a known type id, or nullopt for an id GGUF readers must reject.
std::optional<TypeTraits> type_traits(uint32_t type_id);
// Traits of a known type (never fails for an enumerator).
const TypeTraits& traits(GgmlType type);
std::string_view type_name(GgmlType type);
// Case-insensitive parse of a ggml type name ("q4_k", "F16"); nullopt if unknown.
std::optional<GgmlType> parse_type_name(std::string_view name);

// Bytes of a row of n elements. Throws Error(kInvalidArgument) when n is not a
// multiple of the block size.
size_t row_size(GgmlType type, int64_t n);

// The types with reference dequantization, in a fixed order (for tests/tools).
inline constexpr GgmlType kComputeTypes[] = {
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
    GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
    GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
};

}  // namespace polyinfer
