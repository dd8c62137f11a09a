// Bounds-checked little-endian reads over a byte span. Every read that would run
// past the end throws GgufError(kTruncated) naming the field being read.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "polyinfer/error.hpp"

namespace polyinfer {

class ByteCursor {
 public:
  ByteCursor(std::span<const uint8_t> bytes, const std::string& file)
      : bytes_(bytes), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  uint64_t size() const { return bytes_.size(); }

  template <typename T>
  T read(std::string_view what) {
    require(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  // A GGUF string: uint64 length, then that many bytes (not NUL-terminated).
  std::string read_string(std::string_view what);
  // Copies n raw bytes.
  std::span<const uint8_t> read_bytes(uint64_t n, std::string_view what);

  [[noreturn]] void fail(ErrorCode code, uint64_t at, const std::string& detail) const {
    throw GgufError(code, file_, at, detail);
  }

 private:
  void require(uint64_t n, std::string_view what) const;

  std::span<const uint8_t> bytes_;
  const std::string& file_;
  uint64_t pos_ = 0;
};

}  // namespace polyinfer
