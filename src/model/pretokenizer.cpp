#define PCRE2_CODE_UNIT_WIDTH 8
#include "model/pretokenizer.hpp"

#include <pcre2.h>

#include <algorithm>

#include "model/pretokenizer_regexes.hpp"
#include "model/utf8.hpp"
#include "polyinfer/error.hpp"

namespace polyinfer {

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  explicit Regex(const std::string& pattern) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    // UCP: \s, \d, \w and POSIX classes use Unicode properties, as llama.cpp's own
    // unicode tables do. DOLLAR_ENDONLY: "$" is the end of the piece only.
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                         PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error(ErrorCode::kInvalidArgument, "pre-tokenizer regex does not compile: " +
                                                   std::string(reinterpret_cast<const char*>(msg)));
    }
    // JIT is only a speed-up; the interpreter gives the same matches when it fails.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  }
  ~Regex() { pcre2_code_free(code); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
};

namespace {

using Span = std::pair<size_t, size_t>;  // [begin, end) in the sanitized text

const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD, 3 bytes

// PCRE2 in UTF mode refuses invalid UTF-8, so each invalid byte is replaced by
// U+FFFD; `replaced` records where, to map offsets back to the original text.
std::string sanitize(std::string_view text, std::vector<size_t>& replaced) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (utf8::is_valid_char(text, pos)) {
      const size_t len = utf8::char_len(text, pos);
      out.append(text.substr(pos, len));
      pos += len;
    } else {
      replaced.push_back(out.size());
      out += kReplacement;
      ++pos;
    }
  }
  return out;
}

size_t original_offset(size_t clean, const std::vector<size_t>& replaced) {
  const size_t before =
      std::lower_bound(replaced.begin(), replaced.end(), clean) - replaced.begin();
  return clean - 2 * before;  // each replacement turned 1 byte into 3
}

// Splits one piece by one regex: matches and the gaps between them, in order.
void split_piece(pcre2_code* code, pcre2_match_data* md, std::string_view clean, Span piece,
                 std::vector<Span>& out) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(clean.data() + piece.first);
  const size_t len = piece.second - piece.first;
  size_t last = 0;
  size_t pos = 0;
  while (pos < len) {
    const int rc = pcre2_match(code, subject, len, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "pre-tokenizer regex failed (PCRE2 error " + std::to_string(rc) + ")");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    if (ov[1] == ov[0]) {  // an empty match splits nothing; move one character on
      pos = ov[0] + utf8::char_len(clean, piece.first + ov[0]);
      continue;
    }
    if (ov[0] > last) out.emplace_back(piece.first + last, piece.first + ov[0]);
    out.emplace_back(piece.first + ov[0], piece.first + ov[1]);
    last = pos = ov[1];
  }
  if (last < len) out.emplace_back(piece.first + last, piece.second);
}

}  // namespace

PreTokenizer PreTokenizer::for_pre(const std::string& pre) {
  PreTokenizer p;
  for (const auto& pattern : pre_tokenizer_regexes(pre_tokenizer_kind(pre))) {
    p.regexes_.push_back(std::make_shared<const Regex>(pattern));
  }
  return p;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<size_t> replaced;
  const std::string clean = sanitize(text, replaced);
  std::vector<Span> pieces{{0, clean.size()}};
  for (const auto& regex : regexes_) {
    const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
        pcre2_match_data_create_from_pattern(regex->code, nullptr), &pcre2_match_data_free);
    std::vector<Span> next;
    for (const Span& piece : pieces) split_piece(regex->code, md.get(), clean, piece, next);
    pieces = std::move(next);
  }
  std::vector<std::string_view> words;
  words.reserve(pieces.size());
  for (const Span& piece : pieces) {
    const size_t b = original_offset(piece.first, replaced);
    const size_t e = original_offset(piece.second, replaced);
    words.push_back(text.substr(b, e - b));
  }
  return words;
}

}  // namespace polyinfer
