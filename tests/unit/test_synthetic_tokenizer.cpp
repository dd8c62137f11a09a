// The synthetic byte-level BPE tokenizer: byte symbols, merge consistency, specials.
#include <gtest/gtest.h>

#include <set>
#include <unordered_set>

#include "polyinfer/error.hpp"
#include "polyinfer/synthetic_tokenizer.hpp"

namespace polyinfer {
namespace {

TEST(SyntheticTokenizer, ByteSymbolsAreGpt2s) {
  const auto& s = byte_symbols();
  EXPECT_EQ(std::set<std::string>(s.begin(), s.end()).size(), 256u);
  EXPECT_EQ(s['A'], "A");
  EXPECT_EQ(s['!'], "!");
  EXPECT_EQ(s[' '], "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(s['\n'], "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(s[0], "\xC4\x80");     // U+0100
  EXPECT_EQ(s[0xAD], "\xC5\x83");  // U+0143: the last non-printable byte
}

void expect_consistent(const SyntheticTokenizer& t) {
  ASSERT_EQ(t.tokens.size(), t.token_types.size());
  const std::unordered_set<std::string> vocab(t.tokens.begin(), t.tokens.end());
  EXPECT_EQ(vocab.size(), t.tokens.size()) << "duplicate tokens";
  for (const std::string& m : t.merges) {
    const size_t sp = m.find(' ');
    ASSERT_NE(sp, std::string::npos) << m;
    ASSERT_EQ(m.find(' ', sp + 1), std::string::npos) << m;
    const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
    EXPECT_TRUE(vocab.count(left)) << m;
    EXPECT_TRUE(vocab.count(right)) << m;
    EXPECT_TRUE(vocab.count(left + right)) << m;
  }
  EXPECT_EQ(t.tokens[t.bos_id], "<|begin_of_text|>");
  EXPECT_EQ(t.tokens[t.eos_id], "<|end_of_text|>");
  for (size_t i = 0; i < t.tokens.size(); ++i) {
    const bool special = i >= t.bos_id;
    EXPECT_EQ(t.token_types[i], special ? kTokenTypeControl : kTokenTypeNormal) << i;
  }
}

TEST(SyntheticTokenizer, SmallVocabularyHasNoPadding) {
  const SyntheticTokenizer t = build_synthetic_tokenizer(0);
  expect_consistent(t);
  EXPECT_GE(t.tokens.size(), 512u);
  EXPECT_LE(t.tokens.size(), 1024u);
  EXPECT_EQ(t.eos_id + 1, t.tokens.size());
  EXPECT_EQ(t.bos_id + 1, t.eos_id);
  // Common English pieces are learned (with GPT-2's leading-space symbol).
  const std::unordered_set<std::string> vocab(t.tokens.begin(), t.tokens.end());
  EXPECT_TRUE(vocab.count("\xC4\xA0the"));
}

TEST(SyntheticTokenizer, PaddedToTheRequestedSize) {
  const SyntheticTokenizer t = build_synthetic_tokenizer(32000);
  expect_consistent(t);
  ASSERT_EQ(t.tokens.size(), 32000u);
  EXPECT_EQ(t.tokens[t.eos_id + 1], "<|reserved_special_token_0|>");
  EXPECT_EQ(t.tokens.back(),
            "<|reserved_special_token_" + std::to_string(31999 - t.eos_id - 1) + "|>");
}

TEST(SyntheticTokenizer, SmallestVocabularyIsBytesAndSpecials) {
  const SyntheticTokenizer t = build_synthetic_tokenizer(258);
  expect_consistent(t);
  EXPECT_EQ(t.tokens.size(), 258u);
  EXPECT_TRUE(t.merges.empty());
  EXPECT_THROW(build_synthetic_tokenizer(257), Error);
}

TEST(SyntheticTokenizer, Deterministic) {
  const SyntheticTokenizer a = build_synthetic_tokenizer(0);
  const SyntheticTokenizer b = build_synthetic_tokenizer(0);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.merges, b.merges);
}

TEST(SyntheticTokenizer, TrainerStopsWhenNoPairRepeats) {
  // "ab ab" is the words "ab" and " ab": 'a b' occurs twice and is merged, after
  // which "Ġ ab" occurs once, so training stops.
  EXPECT_EQ(train_bpe("ab ab", 100), std::vector<std::string>{"a b"});
  EXPECT_EQ(train_bpe("ab ab ab", 0), std::vector<std::string>{});
}

}  // namespace
}  // namespace polyinfer
