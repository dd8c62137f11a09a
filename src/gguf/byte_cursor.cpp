#include "gguf/byte_cursor.hpp"

namespace polyinfer {

void ByteCursor::require(uint64_t n, std::string_view what) const {
  if (n > remaining()) {
    fail(ErrorCode::kTruncated, pos_,
         "truncated: " + std::string(what) + " needs " + std::to_string(n) + " bytes, " +
             std::to_string(remaining()) + " left");
  }
}

std::string ByteCursor::read_string(std::string_view what) {
  const uint64_t at = pos_;
  const uint64_t len = read<uint64_t>(what);
  if (len > remaining()) {
    fail(ErrorCode::kStringTooLong, at,
         std::string(what) + ": string length " + std::to_string(len) + " exceeds the " +
             std::to_string(remaining()) + " bytes left in the file");
  }
  std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return s;
}

std::span<const uint8_t> ByteCursor::read_bytes(uint64_t n, std::string_view what) {
  require(n, what);
  std::span<const uint8_t> out = bytes_.subspan(pos_, n);
  pos_ += n;
  return out;
}

}  // namespace polyinfer
