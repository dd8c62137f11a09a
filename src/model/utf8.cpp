#include "model/utf8.hpp"

namespace polyinfer::utf8 {
namespace {

// Sequence length announced by a lead byte; 0 for bytes that cannot lead.
size_t lead_len(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Allowed range of the second byte (RFC 3629 table): excludes overlongs,
// surrogates and code points above U+10FFFF.
bool second_ok(uint8_t lead, uint8_t b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}

bool is_cont(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

// How many bytes from pos match a well-formed prefix of the announced sequence.
size_t matched_prefix(std::string_view s, size_t pos, size_t len) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  size_t i = 1;
  for (; i < len && pos + i < s.size(); ++i) {
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if (i == 1 ? !second_ok(lead, b) : !is_cont(b)) break;
  }
  return i;
}

}  // namespace

bool is_valid_char(std::string_view s, size_t pos) {
  const size_t len = lead_len(static_cast<uint8_t>(s[pos]));
  return len != 0 && matched_prefix(s, pos, len) == len;
}

size_t char_len(std::string_view s, size_t pos) {
  return is_valid_char(s, pos) ? lead_len(static_cast<uint8_t>(s[pos])) : 1;
}

size_t incomplete_tail(std::string_view s) {
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t pos = s.size() - back;
    const size_t len = lead_len(static_cast<uint8_t>(s[pos]));
    if (len == 0) continue;  // a continuation byte: look further back
    return (len > back && matched_prefix(s, pos, len) == back) ? back : 0;
  }
  return 0;
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace polyinfer::utf8
