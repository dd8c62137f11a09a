#include <limits>

#include "polyinfer/error.hpp"
#include "polyinfer/gguf_value.hpp"

namespace polyinfer {

std::string_view value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8:
      return "UINT8";
    case GgufValueType::INT8:
      return "INT8";
    case GgufValueType::UINT16:
      return "UINT16";
    case GgufValueType::INT16:
      return "INT16";
    case GgufValueType::UINT32:
      return "UINT32";
    case GgufValueType::INT32:
      return "INT32";
    case GgufValueType::FLOAT32:
      return "FLOAT32";
    case GgufValueType::BOOL:
      return "BOOL";
    case GgufValueType::STRING:
      return "STRING";
    case GgufValueType::ARRAY:
      return "ARRAY";
    case GgufValueType::UINT64:
      return "UINT64";
    case GgufValueType::INT64:
      return "INT64";
    case GgufValueType::FLOAT64:
      return "FLOAT64";
  }
  return "?";
}

size_t scalar_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL:
      return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16:
      return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32:
      return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64:
      return 8;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY:
      return 0;
  }
  return 0;
}

GgufValue GgufValue::string(std::string v) {
  GgufValue out;
  out.type_ = GgufValueType::STRING;
  out.string_ = std::move(v);
  return out;
}

GgufValue GgufValue::string_array(std::vector<std::string> items) {
  GgufValue out;
  out.type_ = GgufValueType::ARRAY;
  out.elem_type_ = GgufValueType::STRING;
  out.strings_ = std::move(items);
  return out;
}

GgufValue GgufValue::nested_array(std::vector<GgufValue> arrays) {
  for (const GgufValue& a : arrays) {
    if (!a.is_array()) {
      throw Error(ErrorCode::kInvalidArgument, "nested_array: every element must be an array");
    }
  }
  GgufValue out;
  out.type_ = GgufValueType::ARRAY;
  out.elem_type_ = GgufValueType::ARRAY;
  out.nested_ = std::move(arrays);
  return out;
}

GgufValue GgufValue::packed_array(GgufValueType elem, const void* data, size_t count,
                                  size_t elem_bytes) {
  if (scalar_size(elem) == 0 || scalar_size(elem) != elem_bytes) {
    throw Error(ErrorCode::kInvalidArgument, "array of " + std::string(value_type_name(elem)) +
                                                 " given elements of " +
                                                 std::to_string(elem_bytes) + " bytes");
  }
  GgufValue out;
  out.type_ = GgufValueType::ARRAY;
  out.elem_type_ = elem;
  const auto* p = static_cast<const uint8_t*>(data);
  out.packed_.assign(p, p + count * elem_bytes);
  return out;
}

namespace {

// Sign-extends the low `bytes` bytes of bits.
int64_t sign_extend(uint64_t bits, size_t bytes) {
  const unsigned shift = static_cast<unsigned>(64 - 8 * bytes);
  return static_cast<int64_t>(bits << shift) >> shift;
}

bool is_signed_int(GgufValueType t) {
  return t == GgufValueType::INT8 || t == GgufValueType::INT16 || t == GgufValueType::INT32 ||
         t == GgufValueType::INT64;
}

bool is_unsigned_int(GgufValueType t) {
  return t == GgufValueType::UINT8 || t == GgufValueType::UINT16 || t == GgufValueType::UINT32 ||
         t == GgufValueType::UINT64;
}

}  // namespace

std::optional<uint64_t> GgufValue::as_uint() const {
  if (is_unsigned_int(type_)) return bits_;
  if (is_signed_int(type_)) {
    const int64_t v = sign_extend(bits_, scalar_size(type_));
    if (v >= 0) return static_cast<uint64_t>(v);
  }
  return std::nullopt;
}

std::optional<int64_t> GgufValue::as_int() const {
  if (is_signed_int(type_)) return sign_extend(bits_, scalar_size(type_));
  if (is_unsigned_int(type_) && bits_ <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(bits_);
  }
  return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
  if (type_ == GgufValueType::FLOAT32) {
    float f;
    const uint32_t b = static_cast<uint32_t>(bits_);
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (type_ == GgufValueType::FLOAT64) {
    double d;
    std::memcpy(&d, &bits_, 8);
    return d;
  }
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (type_ != GgufValueType::BOOL) return std::nullopt;
  return bits_ != 0;
}

const std::string* GgufValue::as_string() const {
  return type_ == GgufValueType::STRING ? &string_ : nullptr;
}

size_t GgufValue::array_size() const {
  if (elem_type_ == GgufValueType::STRING) return strings_.size();
  if (elem_type_ == GgufValueType::ARRAY) return nested_.size();
  return packed_.size() / scalar_size(elem_type_);
}

GgufValue GgufValue::scalar_from_bytes(GgufValueType type, const uint8_t* bytes) {
  GgufValue out;
  out.type_ = type;
  std::memcpy(&out.bits_, bytes, scalar_size(type));
  return out;
}

GgufValue GgufValue::element(size_t i) const {
  if (elem_type_ == GgufValueType::STRING) return string(strings_.at(i));
  if (elem_type_ == GgufValueType::ARRAY) return nested_.at(i);
  if (i >= array_size()) throw Error(ErrorCode::kInvalidArgument, "array index out of range");
  return scalar_from_bytes(elem_type_, packed_.data() + i * scalar_size(elem_type_));
}

}  // namespace polyinfer
