// Comma lists of counts on the command line, as llama-bench takes them:
// `-p 512,1024 -n 128 -t 1,2 -r 5`.
#pragma once

#include <string_view>
#include <vector>

namespace polyinfer::cli {

// "512,1024" -> {512, 1024}. Each item is decimal digits only (no sign, no spaces)
// and fits in an int; order and repeats are kept. Throws Error(kInvalidArgument)
// naming flag_name, the text and the first bad item for an empty text or item
// ("5,,6"), a sign ("-1"), anything not a digit ("abc") or a value over INT_MAX.
std::vector<int> parse_int_list(std::string_view text, const char* flag_name);

}  // namespace polyinfer::cli
