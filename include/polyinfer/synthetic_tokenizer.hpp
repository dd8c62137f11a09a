// A small but working GPT-2 style byte-level BPE tokenizer for synthetic models:
// the 256 byte symbols, merges learned by a deterministic BPE trainer on an embedded
// English text, the special tokens <|begin_of_text|> and <|end_of_text|>, then
// <|reserved_special_token_N|> padding up to the requested size.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace polyinfer {

inline constexpr int32_t kTokenTypeNormal = 1;   // llama.cpp LLAMA_TOKEN_TYPE_NORMAL
inline constexpr int32_t kTokenTypeControl = 3;  // LLAMA_TOKEN_TYPE_CONTROL

struct SyntheticTokenizer {
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right", by rank
  uint32_t bos_id = 0;
  uint32_t eos_id = 0;
};

// GPT-2's bytes_to_unicode: the UTF-8 symbol standing for each byte.
const std::array<std::string, 256>& byte_symbols();

// Byte-pair merges learned from `text` (split into words GPT-2 style first), most
// frequent pair first, ties broken by the pair's symbols, until `max_merges` or
// until no pair occurs twice. Each merge is "left right" over byte symbols.
std::vector<std::string> train_bpe(const std::string& text, size_t max_merges);

// The embedded training text.
const std::string& tokenizer_corpus();

// n_vocab = 0: no padding (256 + merges + 2 tokens, merges capped for a small
// vocabulary). Otherwise exactly n_vocab tokens; throws Error(kInvalidArgument) when
// n_vocab < 258.
SyntheticTokenizer build_synthetic_tokenizer(int64_t n_vocab);

}  // namespace polyinfer
