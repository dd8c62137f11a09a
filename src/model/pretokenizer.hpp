// Byte-level BPE pre-tokenizer: splits text into words with the regex list that
// llama.cpp (src/llama-vocab.cpp, llm_tokenizer_bpe) uses for a `tokenizer.ggml.pre`
// value, run with PCRE2 in UTF + UCP mode (internal).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace polyinfer {

class PreTokenizer {
 public:
  PreTokenizer() = default;
  // Throws Error(kUnsupported) naming `pre` when it is not a known value.
  static PreTokenizer for_pre(const std::string& pre);

  // Words of `text` as views into it, in order, covering it exactly. Each regex is
  // applied to every piece the previous one produced; the text between matches is
  // kept as a piece too (llama.cpp unicode_regex_split). Invalid UTF-8 bytes are
  // matched as U+FFFD stand-ins, so any bytes split without error.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Regex;
  std::vector<std::shared_ptr<const Regex>> regexes_;
};

}  // namespace polyinfer
