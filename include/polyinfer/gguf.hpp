// Reading GGUF files (spec: ggml/docs/gguf.md; versions 2 and 3, little-endian).
//
// The file is memory-mapped and validated before anything is returned: every
// count, length, dim, offset and size is checked against the file size with
// overflow-safe arithmetic, so a corrupt file raises GgufError (naming the file,
// the byte offset and the problem) and never makes polyinfer read out of bounds
// or allocate more than the file could hold.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "polyinfer/dtype.hpp"
#include "polyinfer/gguf_value.hpp"

namespace polyinfer {

inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr int kGgufMaxDims = 4;        // GGML_MAX_DIMS
inline constexpr int kGgufMaxArrayDepth = 8;  // nested metadata arrays

struct GgufKv {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type;
  uint32_t n_dims;
  // Shape in ggml order: ne[0] is the contiguous (row) dimension; unused dims are 1.
  std::array<int64_t, kGgufMaxDims> ne;
  uint64_t offset;   // bytes from the start of the data section
  uint64_t n_bytes;  // bytes of data
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class MappedFile;

class GgufFile {
 public:
  // Maps and validates the file at path. Throws Error(kIo) if it cannot be opened
  // or mapped, GgufError for malformed content.
  static GgufFile open(const std::string& path);
  // Validates bytes that the caller keeps alive for the GgufFile's lifetime
  // (tests, the fuzzer). `name` stands for the file name in errors.
  static GgufFile parse(std::span<const uint8_t> bytes, std::string name);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_.size(); }
  // The whole file as mapped (read-only; valid while this GgufFile lives).
  std::span<const uint8_t> bytes() const { return bytes_; }
  uint32_t alignment() const { return alignment_; }
  // Absolute offset of the data section (may exceed file_size() for vocab-only files).
  uint64_t data_offset() const { return data_offset_; }

  const std::vector<GgufKv>& metadata() const { return kvs_; }
  const GgufValue* find(std::string_view key) const;
  // Typed lookups: nullopt when the key is absent; Error(kTypeMismatch) when present
  // with a type that does not fit (e.g. a string asked for as a number).
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes inside the mapping (valid while this GgufFile lives).
  std::span<const uint8_t> tensor_data(const GgufTensorInfo& info) const;

 private:
  friend class GgufParser;
  GgufFile() = default;

  std::shared_ptr<const MappedFile> mapping_;  // null when parsing caller-owned bytes
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace polyinfer
