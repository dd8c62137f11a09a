// GGUF parsing and validation. Layout (ggml/docs/gguf.md):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv | n_kv x (string key,
//   u32 type, value) | n_tensors x (string name, u32 n_dims, u64 ne[n_dims],
//   u32 ggml type, u64 offset) | padding to general.alignment | tensor data.
#include <algorithm>
#include <bit>

#include "gguf/byte_cursor.hpp"
#include "gguf/mapped_file.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/gguf.hpp"

namespace polyinfer {
namespace {

// Smallest number of file bytes one metadata entry / tensor info / array element
// can occupy; a count is rejected before any allocation when count * minimum
// exceeds the bytes left.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims=0, type, offset
constexpr uint64_t kMinArrayBytes = 4 + 8;               // nested array: type + count

std::string hex32(uint32_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 7; i >= 0; --i) s += digits[(v >> (4 * i)) & 0xF];
  return s;
}

}  // namespace

class GgufParser {
 public:
  GgufParser(GgufFile& out, std::span<const uint8_t> bytes) : out_(out), cur_(bytes, out.name_) {}

  void run() {
    read_header();
    read_metadata();
    read_alignment();
    read_tensor_infos();
    place_data_section();
    check_tensor_data();
  }

 private:
  void read_header() {
    if (cur_.size() < 4) {
      cur_.fail(ErrorCode::kTruncated, 0,
                "truncated: file is " + std::to_string(cur_.size()) +
                    " bytes, too short for a GGUF header");
    }
    const uint32_t magic = cur_.read<uint32_t>("magic");
    if (magic != 0x46554747u) {  // "GGUF" read little-endian
      cur_.fail(ErrorCode::kBadMagic, 0,
                "bad magic " + hex32(magic) + ": not a GGUF file (expected \"GGUF\")");
    }
    const uint32_t version = cur_.read<uint32_t>("version");
    if (version == 1) {
      cur_.fail(ErrorCode::kUnsupportedVersion, 4,
                "GGUF v1 is not supported, re-convert the model with a current llama.cpp "
                "(convert_hf_to_gguf.py)");
    }
    if (version != 2 && version != 3) {
      const bool swapped = __builtin_bswap32(version) == 2 || __builtin_bswap32(version) == 3;
      cur_.fail(ErrorCode::kUnsupportedVersion, 4,
                "unsupported GGUF version " + std::to_string(version) + " (supported: 2, 3)" +
                    (swapped ? "; this looks like a big-endian GGUF, which is not supported" : ""));
    }
    out_.version_ = version;
    n_tensors_at_ = cur_.pos();
    n_tensors_ = cur_.read<uint64_t>("tensor count");
    n_kv_at_ = cur_.pos();
    n_kv_ = cur_.read<uint64_t>("metadata count");
  }

  void check_count(uint64_t count, uint64_t min_bytes, uint64_t at, const char* what) {
    if (count > cur_.remaining() / min_bytes) {
      cur_.fail(ErrorCode::kTooLarge, at,
                std::string(what) + " " + std::to_string(count) + " cannot fit in the " +
                    std::to_string(cur_.remaining()) + " bytes left in the file");
    }
  }

  void read_metadata() {
    check_count(n_kv_, kMinKvBytes, n_kv_at_, "metadata count");
    out_.kvs_.reserve(n_kv_);
    for (uint64_t i = 0; i < n_kv_; ++i) {
      const uint64_t at = cur_.pos();
      std::string key = cur_.read_string("metadata key");
      if (out_.kv_index_.count(key) != 0) {
        cur_.fail(ErrorCode::kDuplicateKey, at, "duplicate metadata key '" + key + "'");
      }
      const GgufValueType type = read_value_type("metadata value type");
      GgufValue value = read_value(type, 0);
      out_.kv_index_.emplace(key, out_.kvs_.size());
      out_.kvs_.push_back({std::move(key), std::move(value)});
    }
  }

  GgufValueType read_value_type(std::string_view what) {
    const uint64_t at = cur_.pos();
    const uint32_t t = cur_.read<uint32_t>(what);
    if (t >= kGgufValueTypeCount) {
      cur_.fail(ErrorCode::kUnknownValueType, at,
                "unknown metadata value type " + std::to_string(t) + " (valid: 0..12)");
    }
    return static_cast<GgufValueType>(t);
  }

  GgufValue read_value(GgufValueType type, int depth) {
    switch (type) {
      case GgufValueType::STRING:
        return GgufValue::string(cur_.read_string("string value"));
      case GgufValueType::ARRAY:
        return read_array(depth + 1);
      default:
        break;
    }
    const size_t size = scalar_size(type);
    std::span<const uint8_t> raw = cur_.read_bytes(size, value_type_name(type));
    GgufValue v = GgufValue::scalar_from_bytes(type, raw.data());
    if (type == GgufValueType::BOOL && raw[0] > 1) {
      cur_.fail(ErrorCode::kTypeMismatch, cur_.pos() - 1,
                "bool value " + std::to_string(raw[0]) + " is neither 0 nor 1");
    }
    return v;
  }

  GgufValue read_array(int depth) {
    const uint64_t at = cur_.pos();
    if (depth > kGgufMaxArrayDepth) {
      cur_.fail(ErrorCode::kArrayTooDeep, at,
                "metadata arrays nested deeper than " + std::to_string(kGgufMaxArrayDepth));
    }
    const GgufValueType elem = read_value_type("array element type");
    const uint64_t count_at = cur_.pos();
    const uint64_t count = cur_.read<uint64_t>("array length");
    if (elem == GgufValueType::STRING) {
      check_count(count, 8, count_at, "string array length");
      std::vector<std::string> items;
      items.reserve(count);
      for (uint64_t i = 0; i < count; ++i) items.push_back(cur_.read_string("array string"));
      return GgufValue::string_array(std::move(items));
    }
    if (elem == GgufValueType::ARRAY) {
      check_count(count, kMinArrayBytes, count_at, "nested array length");
      std::vector<GgufValue> items;
      items.reserve(count);
      for (uint64_t i = 0; i < count; ++i) items.push_back(read_array(depth + 1));
      return GgufValue::nested_array(std::move(items));
    }
    const size_t size = scalar_size(elem);
    check_count(count, size, count_at, "array length");
    std::span<const uint8_t> raw = cur_.read_bytes(count * size, "array data");
    if (elem == GgufValueType::BOOL) {
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] > 1) {
          cur_.fail(ErrorCode::kTypeMismatch, cur_.pos() - raw.size() + i,
                    "bool value " + std::to_string(raw[i]) + " is neither 0 nor 1");
        }
      }
    }
    return GgufValue::packed_array(elem, raw.data(), count, size);
  }

  void read_alignment() {
    const GgufValue* v = out_.find("general.alignment");
    if (v == nullptr) return;
    if (v->type() != GgufValueType::UINT32) {
      cur_.fail(ErrorCode::kTypeMismatch, n_kv_at_,
                "general.alignment has type " + std::string(value_type_name(v->type())) +
                    ", expected UINT32");
    }
    const uint64_t a = *v->as_uint();
    if (a == 0 || !std::has_single_bit(a)) {
      cur_.fail(ErrorCode::kBadAlignment, n_kv_at_,
                "general.alignment " + std::to_string(a) + " is not a power of two");
    }
    out_.alignment_ = static_cast<uint32_t>(a);
  }

  void read_tensor_infos() {
    check_count(n_tensors_, kMinTensorInfoBytes, n_tensors_at_, "tensor count");
    out_.tensors_.reserve(n_tensors_);
    info_offsets_.reserve(n_tensors_);
    for (uint64_t i = 0; i < n_tensors_; ++i) read_tensor_info();
  }

  void read_tensor_info() {
    const uint64_t at = cur_.pos();
    GgufTensorInfo t{};
    t.name = cur_.read_string("tensor name");
    if (out_.tensor_index_.count(t.name) != 0) {
      cur_.fail(ErrorCode::kDuplicateTensor, at, "duplicate tensor name '" + t.name + "'");
    }
    const uint64_t dims_at = cur_.pos();
    t.n_dims = cur_.read<uint32_t>("tensor n_dims");
    if (t.n_dims > kGgufMaxDims) {
      cur_.fail(ErrorCode::kBadTensorShape, dims_at,
                "tensor '" + t.name + "' has " + std::to_string(t.n_dims) + " dims (max " +
                    std::to_string(kGgufMaxDims) + ")");
    }
    t.ne = {1, 1, 1, 1};
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const uint64_t ne_at = cur_.pos();
      const uint64_t ne = cur_.read<uint64_t>("tensor dim");
      if (ne == 0) {
        cur_.fail(ErrorCode::kBadTensorShape, ne_at,
                  "tensor '" + t.name + "': dim " + std::to_string(d) + " is 0");
      }
      if (ne > static_cast<uint64_t>(INT64_MAX) ||
          __builtin_mul_overflow(n_elements, static_cast<int64_t>(ne), &n_elements)) {
        cur_.fail(ErrorCode::kDimsOverflow, ne_at,
                  "tensor '" + t.name + "': dim " + std::to_string(d) + " = " + std::to_string(ne) +
                      " overflows the element count");
      }
      t.ne[d] = static_cast<int64_t>(ne);
    }
    const uint64_t type_at = cur_.pos();
    const uint32_t type_id = cur_.read<uint32_t>("tensor type");
    const std::optional<TypeTraits> tt = type_traits(type_id);
    if (!tt) {
      cur_.fail(ErrorCode::kUnknownTensorType, type_at,
                "tensor '" + t.name + "' has unknown ggml type " + std::to_string(type_id));
    }
    t.type = static_cast<GgmlType>(type_id);
    if (t.ne[0] % tt->block_size != 0) {
      cur_.fail(ErrorCode::kBadTensorShape, dims_at,
                "tensor '" + t.name + "': ne[0] = " + std::to_string(t.ne[0]) +
                    " is not a multiple of the " + std::string(tt->name) + " block size " +
                    std::to_string(tt->block_size));
    }
    // bytes = (ne0 / block) * type_size * ne1 * ne2 * ne3. Every dim is >= 1 and the
    // element count fits int64, so the row count does too; row bytes times rows may not.
    const uint64_t row_bytes = static_cast<uint64_t>(t.ne[0] / tt->block_size) * tt->type_size;
    const uint64_t rows = static_cast<uint64_t>(t.ne[1]) * static_cast<uint64_t>(t.ne[2]) *
                          static_cast<uint64_t>(t.ne[3]);
    if (__builtin_mul_overflow(row_bytes, rows, &t.n_bytes)) {
      cur_.fail(ErrorCode::kDimsOverflow, dims_at,
                "tensor '" + t.name + "': byte size overflows 64 bits");
    }
    info_offsets_.push_back(cur_.pos());
    t.offset = cur_.read<uint64_t>("tensor offset");
    out_.tensor_index_.emplace(t.name, out_.tensors_.size());
    out_.tensors_.push_back(std::move(t));
  }

  void place_data_section() {
    const uint64_t a = out_.alignment_;
    const uint64_t end = cur_.pos();
    if (end > UINT64_MAX - a) {
      cur_.fail(ErrorCode::kTooLarge, end, "data section offset overflows");
    }
    out_.data_offset_ = (end + a - 1) / a * a;
  }

  // Each tensor lies inside the file, aligned, and no two overlap.
  void check_tensor_data() {
    const uint64_t size = cur_.size();
    for (size_t i = 0; i < out_.tensors_.size(); ++i) {
      const GgufTensorInfo& t = out_.tensors_[i];
      const uint64_t at = info_offsets_[i];
      if (t.offset % out_.alignment_ != 0) {
        cur_.fail(ErrorCode::kTensorOutOfBounds, at,
                  "tensor '" + t.name + "': data offset " + std::to_string(t.offset) +
                      " is not a multiple of the alignment " + std::to_string(out_.alignment_));
      }
      uint64_t begin = 0, end = 0;
      if (__builtin_add_overflow(out_.data_offset_, t.offset, &begin) ||
          __builtin_add_overflow(begin, t.n_bytes, &end) || end > size) {
        cur_.fail(ErrorCode::kTensorOutOfBounds, at,
                  "tensor '" + t.name + "': data [" + std::to_string(t.offset) + ", +" +
                      std::to_string(t.n_bytes) + ") past the end of the data section (file is " +
                      std::to_string(size) + " bytes, data starts at " +
                      std::to_string(out_.data_offset_) + ")");
      }
    }
    check_overlaps();
  }

  void check_overlaps() {
    std::vector<size_t> order(out_.tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto& ts = out_.tensors_;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return ts[a].offset < ts[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const GgufTensorInfo& prev = ts[order[k - 1]];
      const GgufTensorInfo& t = ts[order[k]];
      if (prev.n_bytes > 0 && t.offset < prev.offset + prev.n_bytes) {
        cur_.fail(ErrorCode::kTensorOutOfBounds, info_offsets_[order[k]],
                  "tensor '" + t.name + "' overlaps the data of tensor '" + prev.name + "'");
      }
    }
  }

  GgufFile& out_;
  ByteCursor cur_;
  uint64_t n_tensors_ = 0, n_kv_ = 0;
  uint64_t n_tensors_at_ = 0, n_kv_at_ = 0;
  std::vector<uint64_t> info_offsets_;
};

GgufFile GgufFile::open(const std::string& path) {
  auto mapping = std::make_shared<const MappedFile>(path);
  GgufFile f = parse(mapping->bytes(), path);
  f.mapping_ = std::move(mapping);
  return f;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, std::string name) {
  GgufFile f;
  f.name_ = std::move(name);
  f.bytes_ = bytes;
  GgufParser(f, bytes).run();
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

namespace {

[[noreturn]] void mismatch(const std::string& file, std::string_view key, const GgufValue& v,
                           const char* wanted) {
  throw Error(ErrorCode::kTypeMismatch, file + ": metadata '" + std::string(key) + "' is " +
                                            std::string(value_type_name(v.type())) + ", expected " +
                                            wanted);
}

}  // namespace

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (const std::string* s = v->as_string()) return *s;
  mismatch(name_, key, *v, "a string");
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto u = v->as_uint()) return u;
  mismatch(name_, key, *v, "a non-negative integer");
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto f = v->as_float()) return f;
  if (auto i = v->as_int()) return static_cast<double>(*i);
  mismatch(name_, key, *v, "a number");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (auto b = v->as_bool()) return b;
  mismatch(name_, key, *v, "a bool");
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> GgufFile::tensor_data(const GgufTensorInfo& info) const {
  return bytes_.subspan(data_offset_ + info.offset, info.n_bytes);
}

}  // namespace polyinfer
