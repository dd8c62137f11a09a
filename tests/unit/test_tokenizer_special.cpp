// Special tokens (parse_special, BOS/EOS), metadata errors, and pieces.
#include <gtest/gtest.h>

#include "polyinfer/error.hpp"
#include "polyinfer/gguf_writer.hpp"
#include "tokenizer_test_data.hpp"

namespace polyinfer::test {
namespace {

using Ids = std::vector<int32_t>;

TEST(TokenizerSpecial, SpmControlTokensOnlyWithParseSpecial) {
  const Tokenizer tok = load_tokenizer("vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_EQ(tok.bos(), 1);
  ASSERT_EQ(tok.eos(), 2);
  ASSERT_EQ(tok.unk(), 0);
  const Ids parsed = tok.encode("<s>Hi</s>", false, true);
  // The space prefix goes before the text that follows a special token.
  EXPECT_EQ(parsed, (Ids{1, tok.encode("Hi", false, false)[0], 2}));
  EXPECT_EQ(tok.encode("Hi", false, false), tok.encode("Hi", false, true));
  const Ids plain = tok.encode("<s>Hi</s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(tok.decode(plain), "<s>Hi</s>");
}

TEST(TokenizerSpecial, AddSpecialFollowsVocabFlags) {
  const Tokenizer spm = load_tokenizer("vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(spm.add_bos());
  ASSERT_FALSE(spm.add_eos());
  const Ids with = spm.encode("Hello world", true, false);
  const Ids without = spm.encode("Hello world", false, false);
  ASSERT_EQ(with.size(), without.size() + 1);
  EXPECT_EQ(with[0], 1);
  EXPECT_EQ(Ids(with.begin() + 1, with.end()), without);
  EXPECT_EQ(spm.encode("", true, false), Ids{1});
  // gpt-2: bos = eos = 50256 but add_bos is off by default for BPE (llama.cpp).
  const Tokenizer gpt2 = load_tokenizer("vocab/ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(gpt2.bos(), 50256);
  EXPECT_FALSE(gpt2.add_bos());
  EXPECT_EQ(gpt2.encode("Hello", true, false), gpt2.encode("Hello", false, false));
}

TEST(TokenizerSpecial, BpeControlTokens) {
  const Tokenizer tok = load_tokenizer("vocab/ggml-vocab-starcoder.gguf");
  const Ids parsed = tok.encode("<fim_prefix>x = 1<fim_suffix>", false, true);
  ASSERT_GE(parsed.size(), 3u);
  EXPECT_EQ(parsed.front(), 1);
  EXPECT_EQ(parsed.back(), 3);
  EXPECT_EQ(tok.decode(parsed), "x = 1");
  const Ids plain = tok.encode("<fim_prefix>x = 1<fim_suffix>", false, false);
  EXPECT_GT(plain.size(), parsed.size());
  EXPECT_EQ(tok.decode(plain), "<fim_prefix>x = 1<fim_suffix>");
  EXPECT_EQ(tok.piece(1), "<fim_prefix>");
}

TEST(TokenizerSpecial, PiecesMapSpacesAndBytes) {
  const Tokenizer spm = load_tokenizer("vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(spm.piece(13), "\n");  // <0x0A>
  EXPECT_EQ(spm.token_type(13), TokenType::kByte);
  EXPECT_EQ(spm.piece(29871), " ");  // "▁"
  const Tokenizer gpt2 = load_tokenizer("vocab/ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(gpt2.piece(gpt2.encode(" the", false, false).at(0)), " the");  // "Ġthe"
  EXPECT_THROW(spm.piece(32000), Error);
  EXPECT_THROW(spm.piece(-1), Error);
  const Ids bad{5, 99999};
  EXPECT_THROW(spm.decode(bad), Error);
}

Tokenizer from_metadata(const std::string& model, const std::string& pre) {
  GgufWriter w;
  w.set("tokenizer.ggml.model", GgufValue::string(model));
  if (!pre.empty()) w.set("tokenizer.ggml.pre", GgufValue::string(pre));
  w.set("tokenizer.ggml.tokens", GgufValue::string_array({"a", "b", "ab"}));
  w.set("tokenizer.ggml.merges", GgufValue::string_array({"a b"}));
  VectorSink sink;
  w.begin(sink);
  w.finish();
  static std::vector<std::vector<uint8_t>> keep;  // parse() borrows the bytes
  keep.push_back(sink.bytes());
  return Tokenizer::from_gguf(GgufFile::parse(keep.back(), "synthetic.gguf"));
}

void expect_error_naming(const std::function<void()>& fn, ErrorCode code, const std::string& name) {
  try {
    fn();
    FAIL() << "no error for " << name;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code);
    EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, UnknownModelAndPreAreNamed) {
  expect_error_naming([] { from_metadata("wordpiece-xyz", ""); }, ErrorCode::kUnsupported,
                      "wordpiece-xyz");
  expect_error_naming([] { from_metadata("gpt2", "no-such-pre"); }, ErrorCode::kUnsupported,
                      "no-such-pre");
}

TEST(TokenizerErrors, EveryListedPreTokenizerCompiles) {
  for (const char* pre : {"default", "gpt-2", "llama3", "llama-bpe", "qwen2", "starcoder", "smollm",
                          "deepseek-llm", "deepseek-coder", "falcon"}) {
    const Tokenizer tok = from_metadata("gpt2", pre);
    EXPECT_EQ(tok.encode("ab", false, false), Ids{2}) << pre;
    EXPECT_EQ(tok.encode("abab", false, false), (Ids{2, 2})) << pre;
  }
}

TEST(TokenizerErrors, MissingModelKey) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("llama"));
  VectorSink sink;
  w.begin(sink);
  w.finish();
  const auto file = GgufFile::parse(sink.bytes(), "empty.gguf");
  try {
    Tokenizer::from_gguf(file);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kKeyNotFound);
  }
}

}  // namespace
}  // namespace polyinfer::test
