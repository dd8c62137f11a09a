#include "model/byte_map.hpp"

#include <array>
#include <unordered_map>

#include "model/utf8.hpp"

namespace polyinfer::byte_map {
namespace {

// Bytes that are printable Latin-1 keep their own code point; the rest take
// 256, 257, ... in byte order.
bool keeps_own_code_point(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> to_text;
  std::unordered_map<uint32_t, uint8_t> to_byte;
  Tables() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = keeps_own_code_point(b) ? static_cast<uint32_t>(b) : next++;
      utf8::append(to_text[b], cp);
      to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

uint32_t code_point(std::string_view s, size_t pos, size_t len) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (len == 1) return b0;
  uint32_t cp = b0 & (0x7F >> len);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3F);
  return cp;
}

}  // namespace

const std::string& encode(uint8_t b) {
  return tables().to_text[b];
}

std::string decode(std::string_view text) {
  const auto& to_byte = tables().to_byte;
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8::char_len(text, pos);
    auto it =
        utf8::is_valid_char(text, pos) ? to_byte.find(code_point(text, pos, len)) : to_byte.end();
    if (it != to_byte.end()) {
      out += static_cast<char>(it->second);
    } else {
      out.append(text.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

}  // namespace polyinfer::byte_map
