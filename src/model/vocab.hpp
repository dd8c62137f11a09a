// The loaded vocabulary shared by the tokenizer algorithms (internal).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/pretokenizer.hpp"
#include "polyinfer/tokenizer.hpp"

namespace polyinfer {

// Hash that lets unordered_map<std::string, ...> be searched with a string_view
// without building a std::string per lookup (the merge loops look up a lot).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

enum class VocabModel { kSpm, kBpe };

struct Vocab {
  VocabModel model = VocabModel::kSpm;
  std::vector<std::string> tokens;
  std::vector<float> scores;  // SPM merge priority; empty for BPE
  std::vector<TokenType> types;
  StringMap token_to_id;  // when a string repeats, the last id wins (as llama.cpp)
  StringMap merge_rank;   // BPE: "left right" -> rank (line index in merges)
  // Tokens matched literally in the input before tokenizing, longest first.
  std::vector<int32_t> special_tokens;
  PreTokenizer pre;            // BPE only
  bool ignore_merges = false;  // BPE llama3: a word that is a token is kept whole
  int32_t bos = -1, eos = -1, eot = -1, unk = -1, pad = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = false;

  int32_t find(std::string_view text) const {
    auto it = token_to_id.find(text);
    return it == token_to_id.end() ? -1 : it->second;
  }
};

// llm_tokenizer_spm: appends the ids of one plain-text fragment (no specials in it).
void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);
// llm_tokenizer_bpe: the same for byte-level BPE.
void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

}  // namespace polyinfer
