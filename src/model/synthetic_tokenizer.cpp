#include "polyinfer/synthetic_tokenizer.hpp"

#include <unordered_set>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

// Without a requested size the vocabulary stays small (tests): at most this many tokens.
constexpr size_t kDefaultMaxTokens = 1024;
constexpr size_t kSpecialTokens = 2;  // bos, eos

void add_token(SyntheticTokenizer& t, std::string text, int32_t type) {
  t.tokens.push_back(std::move(text));
  t.token_types.push_back(type);
}

}  // namespace

SyntheticTokenizer build_synthetic_tokenizer(int64_t n_vocab) {
  const size_t min_vocab = 256 + kSpecialTokens;
  if (n_vocab != 0 && n_vocab < static_cast<int64_t>(min_vocab)) {
    throw Error(ErrorCode::kInvalidArgument,
                "vocabulary of " + std::to_string(n_vocab) + " is below the minimum of 258");
  }
  const size_t target = n_vocab == 0 ? kDefaultMaxTokens : static_cast<size_t>(n_vocab);
  SyntheticTokenizer t;
  t.merges = train_bpe(tokenizer_corpus(), target - min_vocab);
  for (const std::string& s : byte_symbols()) add_token(t, s, kTokenTypeNormal);
  // Two merges can spell the same string ("a bc", "ab c"): the token is listed once.
  std::unordered_set<std::string> seen(t.tokens.begin(), t.tokens.end());
  for (const std::string& m : t.merges) {
    std::string joined = m;
    joined.erase(m.find(' '), 1);
    if (seen.insert(joined).second) add_token(t, std::move(joined), kTokenTypeNormal);
  }
  t.bos_id = static_cast<uint32_t>(t.tokens.size());
  add_token(t, "<|begin_of_text|>", kTokenTypeControl);
  t.eos_id = static_cast<uint32_t>(t.tokens.size());
  add_token(t, "<|end_of_text|>", kTokenTypeControl);
  for (size_t i = 0; n_vocab != 0 && t.tokens.size() < target; ++i) {
    add_token(t, "<|reserved_special_token_" + std::to_string(i) + "|>", kTokenTypeControl);
  }
  return t;
}

}  // namespace polyinfer
