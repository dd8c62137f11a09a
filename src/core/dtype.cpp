#include "polyinfer/dtype.hpp"

#include <array>
#include <cctype>
#include <string>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

struct Entry {
  GgmlType type;
  TypeTraits traits;
};

// Block sizes and byte sizes as in ggml.c type_traits (and gguf-py GGML_QUANT_SIZES).
constexpr std::array kTable = {
    Entry{GgmlType::F32, {"F32", 1, 4, true, true}},
    Entry{GgmlType::F16, {"F16", 1, 2, true, true}},
    Entry{GgmlType::Q4_0, {"Q4_0", 32, 18, true, true}},
    Entry{GgmlType::Q4_1, {"Q4_1", 32, 20, true, true}},
    Entry{GgmlType::Q5_0, {"Q5_0", 32, 22, true, true}},
    Entry{GgmlType::Q5_1, {"Q5_1", 32, 24, true, true}},
    Entry{GgmlType::Q8_0, {"Q8_0", 32, 34, true, true}},
    Entry{GgmlType::Q8_1, {"Q8_1", 32, 40, false, false}},
    Entry{GgmlType::Q2_K, {"Q2_K", 256, 84, true, false}},
    Entry{GgmlType::Q3_K, {"Q3_K", 256, 110, true, false}},
    Entry{GgmlType::Q4_K, {"Q4_K", 256, 144, true, true}},
    Entry{GgmlType::Q5_K, {"Q5_K", 256, 176, true, true}},
    Entry{GgmlType::Q6_K, {"Q6_K", 256, 210, true, true}},
    Entry{GgmlType::Q8_K, {"Q8_K", 256, 292, false, false}},
    Entry{GgmlType::IQ2_XXS, {"IQ2_XXS", 256, 66, false, false}},
    Entry{GgmlType::IQ2_XS, {"IQ2_XS", 256, 74, false, false}},
    Entry{GgmlType::IQ3_XXS, {"IQ3_XXS", 256, 98, false, false}},
    Entry{GgmlType::IQ1_S, {"IQ1_S", 256, 50, false, false}},
    Entry{GgmlType::IQ4_NL, {"IQ4_NL", 32, 18, false, false}},
    Entry{GgmlType::IQ3_S, {"IQ3_S", 256, 110, false, false}},
    Entry{GgmlType::IQ2_S, {"IQ2_S", 256, 82, false, false}},
    Entry{GgmlType::IQ4_XS, {"IQ4_XS", 256, 136, false, false}},
    Entry{GgmlType::I8, {"I8", 1, 1, false, false}},
    Entry{GgmlType::I16, {"I16", 1, 2, false, false}},
    Entry{GgmlType::I32, {"I32", 1, 4, false, false}},
    Entry{GgmlType::I64, {"I64", 1, 8, false, false}},
    Entry{GgmlType::F64, {"F64", 1, 8, false, false}},
    Entry{GgmlType::IQ1_M, {"IQ1_M", 256, 56, false, false}},
    Entry{GgmlType::BF16, {"BF16", 1, 2, true, true}},
    Entry{GgmlType::TQ1_0, {"TQ1_0", 256, 54, false, false}},
    Entry{GgmlType::TQ2_0, {"TQ2_0", 256, 66, false, false}},
    Entry{GgmlType::MXFP4, {"MXFP4", 32, 17, false, false}},
};

const Entry* find(uint32_t id) {
  for (const Entry& e : kTable) {
    if (static_cast<uint32_t>(e.type) == id) return &e;
  }
  return nullptr;
}

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  const Entry* e = find(type_id);
  if (e == nullptr) return std::nullopt;
  return e->traits;
}

const TypeTraits& traits(GgmlType type) {
  const Entry* e = find(static_cast<uint32_t>(type));
  if (e == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "unknown ggml type id " + std::to_string(static_cast<uint32_t>(type)));
  }
  return e->traits;
}

std::string_view type_name(GgmlType type) {
  return traits(type).name;
}

std::optional<GgmlType> parse_type_name(std::string_view name) {
  for (const Entry& e : kTable) {
    if (e.traits.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i) {
      same = std::toupper(static_cast<unsigned char>(name[i])) == e.traits.name[i];
    }
    if (same) return e.type;
  }
  return std::nullopt;
}

size_t row_size(GgmlType type, int64_t n) {
  const TypeTraits& t = traits(type);
  if (n < 0 || n % t.block_size != 0) {
    throw Error(ErrorCode::kInvalidArgument, "row of " + std::to_string(n) + " elements is not a " +
                                                 "multiple of the " + std::string(t.name) +
                                                 " block size " + std::to_string(t.block_size));
  }
  return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace polyinfer
