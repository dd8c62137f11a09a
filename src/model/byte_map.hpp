// GPT-2's bytes_to_unicode table (openai/gpt-2 encoder.py, used by llama.cpp
// unicode_byte_to_utf8): every byte gets a printable code point so byte-level BPE
// vocab strings never hold raw control bytes or spaces (internal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace polyinfer::byte_map {

// The UTF-8 string that stands for byte b in a BPE vocab.
const std::string& encode(uint8_t b);
// Maps one vocab string back to bytes; characters outside the table are kept as
// they are (llama.cpp does the same for user text inside BPE tokens).
std::string decode(std::string_view text);

}  // namespace polyinfer::byte_map
