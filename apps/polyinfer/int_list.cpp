#include "int_list.hpp"

#include <charconv>
#include <string>

#include "polyinfer/error.hpp"

namespace polyinfer::cli {
namespace {

// The user's text in quotes, control characters shown as '?' so the error stays
// on one line.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return out + "\"";
}

int parse_item(std::string_view item, std::string_view text, const char* flag_name, size_t index) {
  const auto fail = [&](const std::string& why) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(flag_name) + ": " + quoted(text) + " is not a comma list of " +
                    "non-negative integers: item " + std::to_string(index + 1) + " " + why);
  };
  if (item.empty()) fail("is empty");
  // from_chars would take a leading '-'; only digits are allowed.
  if (item.find_first_not_of("0123456789") != std::string_view::npos) {
    fail(quoted(item) + " is not a number");
  }
  int value = 0;
  // All digits: the only way from_chars can fail is overflow.
  if (std::from_chars(item.data(), item.data() + item.size(), value).ec != std::errc{}) {
    fail(quoted(item) + " is too large");
  }
  return value;
}

}  // namespace

std::vector<int> parse_int_list(std::string_view text, const char* flag_name) {
  std::vector<int> out;
  size_t start = 0;
  for (size_t index = 0;; ++index) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma - start);
    out.push_back(parse_item(item, text, flag_name, index));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace polyinfer::cli
