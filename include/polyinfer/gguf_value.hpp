// A GGUF metadata value (spec: ggml/docs/gguf.md, "gguf_metadata_value_type").
// Scalars, strings, and arrays (of scalars, of strings, or nested arrays).
// Numeric arrays are kept packed (little-endian, as in the file) so memory stays
// within a small constant factor of the bytes the file holds.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polyinfer {

enum class GgufValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
inline constexpr uint32_t kGgufValueTypeCount = 13;

// "UINT8", "STRING", ... (the spec's names, upper case).
std::string_view value_type_name(GgufValueType type);
// Bytes of one scalar of this type in a file; 0 for STRING and ARRAY.
size_t scalar_size(GgufValueType type);

class GgufValue {
 public:
  GgufValue() = default;

  static GgufValue u8(uint8_t v) { return scalar(GgufValueType::UINT8, v); }
  static GgufValue i8(int8_t v) { return scalar(GgufValueType::INT8, v); }
  static GgufValue u16(uint16_t v) { return scalar(GgufValueType::UINT16, v); }
  static GgufValue i16(int16_t v) { return scalar(GgufValueType::INT16, v); }
  static GgufValue u32(uint32_t v) { return scalar(GgufValueType::UINT32, v); }
  static GgufValue i32(int32_t v) { return scalar(GgufValueType::INT32, v); }
  static GgufValue f32(float v) { return scalar(GgufValueType::FLOAT32, v); }
  static GgufValue boolean(bool v) { return scalar(GgufValueType::BOOL, uint8_t{v}); }
  static GgufValue u64(uint64_t v) { return scalar(GgufValueType::UINT64, v); }
  static GgufValue i64(int64_t v) { return scalar(GgufValueType::INT64, v); }
  static GgufValue f64(double v) { return scalar(GgufValueType::FLOAT64, v); }
  static GgufValue string(std::string v);
  static GgufValue string_array(std::vector<std::string> items);
  // Array of `elem` scalars; T must be the C type of `elem`. Throws
  // Error(kInvalidArgument) when elem is STRING/ARRAY or sizeof(T) differs.
  template <typename T>
  static GgufValue array(GgufValueType elem, std::span<const T> items) {
    return packed_array(elem, items.data(), items.size(), sizeof(T));
  }
  // Array whose elements are themselves arrays (elem type ARRAY). Throws
  // Error(kInvalidArgument) if any element is not an array.
  static GgufValue nested_array(std::vector<GgufValue> arrays);
  // A numeric/bool scalar from its little-endian bytes (scalar_size(type) of them).
  static GgufValue scalar_from_bytes(GgufValueType type, const uint8_t* bytes);
  // Numeric array from raw little-endian element bytes (used by the reader); throws
  // like array().
  static GgufValue packed_array(GgufValueType elem, const void* data, size_t count,
                                size_t elem_bytes);

  GgufValueType type() const { return type_; }
  bool is_array() const { return type_ == GgufValueType::ARRAY; }

  // Scalar access; nullopt when the value is not of a fitting type.
  // as_uint: any integer type holding a non-negative value. as_int: any integer type
  // whose value fits int64. as_float: FLOAT32/FLOAT64.
  std::optional<uint64_t> as_uint() const;
  std::optional<int64_t> as_int() const;
  std::optional<double> as_float() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;

  // Array access (precondition: is_array()).
  GgufValueType array_type() const { return elem_type_; }
  size_t array_size() const;
  // Element i as a standalone value (copies; for printing and tests). Throws
  // Error(kInvalidArgument) (numeric arrays) or std::out_of_range when i >= array_size().
  GgufValue element(size_t i) const;
  const std::vector<std::string>& strings() const { return strings_; }
  const std::vector<GgufValue>& arrays() const { return nested_; }
  // Raw little-endian bytes of a numeric array.
  std::span<const uint8_t> packed_bytes() const { return packed_; }
  // Numeric array converted element-wise to T (floats and ints convert by value).
  template <typename T>
  std::vector<T> numbers() const;
  // Raw bits of a numeric/bool scalar (little-endian, zero-extended).
  uint64_t scalar_bits() const { return bits_; }

  bool operator==(const GgufValue&) const = default;

 private:
  template <typename T>
  static GgufValue scalar(GgufValueType type, T v) {
    GgufValue out;
    out.type_ = type;
    std::memcpy(&out.bits_, &v, sizeof(T));
    return out;
  }

  GgufValueType type_ = GgufValueType::UINT8;
  GgufValueType elem_type_ = GgufValueType::UINT8;  // ARRAY only
  uint64_t bits_ = 0;
  std::string string_;
  std::vector<uint8_t> packed_;
  std::vector<std::string> strings_;
  std::vector<GgufValue> nested_;
};

template <typename T>
std::vector<T> GgufValue::numbers() const {
  std::vector<T> out;
  const size_t n = array_size();
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const GgufValue e = element(i);
    if (auto f = e.as_float()) {
      out.push_back(static_cast<T>(*f));
    } else if (auto s = e.as_int()) {
      out.push_back(static_cast<T>(*s));
    } else if (auto u = e.as_uint()) {
      out.push_back(static_cast<T>(*u));
    } else if (auto b = e.as_bool()) {
      out.push_back(static_cast<T>(*b));
    }
  }
  return out;
}

}  // namespace polyinfer
