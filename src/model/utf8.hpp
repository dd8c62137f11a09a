// UTF-8 helpers shared by the tokenizers (internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace polyinfer::utf8 {

// Length of the well-formed UTF-8 character starting at s[pos] (1..4), or 1 when the
// bytes there are not one (stray continuation, overlong form, surrogate, > U+10FFFF,
// truncated sequence): the tokenizers then treat that single byte as a symbol.
size_t char_len(std::string_view s, size_t pos);
bool is_valid_char(std::string_view s, size_t pos);

// Number of bytes at the end of s that start a well-formed character but stop short
// of its end (0..3); more bytes could still complete it.
size_t incomplete_tail(std::string_view s);

// Appends the UTF-8 encoding of code point cp.
void append(std::string& out, uint32_t cp);

}  // namespace polyinfer::utf8
