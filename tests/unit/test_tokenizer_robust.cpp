// Streaming decode and hostile input: invalid UTF-8, NUL bytes, empty text, 10 MB.
#include <gtest/gtest.h>

#include <chrono>

#include "tokenizer_test_data.hpp"

namespace polyinfer::test {
namespace {

using Ids = std::vector<int32_t>;

const char* const kVocabs[] = {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf",
                               "vocab/ggml-vocab-starcoder.gguf"};

// Complete UTF-8 only: no chunk may end inside a character.
bool ends_on_char_boundary(const std::string& s) {
  if (s.empty()) return true;
  size_t i = s.size() - 1;
  size_t back = 0;
  while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80 && back < 3) {
    --i;
    ++back;
  }
  const auto lead = static_cast<uint8_t>(s[i]);
  const size_t need = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  return need == back + 1;
}

TEST(TokenizerStreaming, NeverEmitsASplitCharacter) {
  const std::string text =
      "ied 4 ½ months, Führer 🦙🦙 ❤️ 山の上 \xF0\x9F\x98\x80 end";
  for (const char* vocab : kVocabs) {
    const Tokenizer tok = load_tokenizer(vocab);
    const Ids ids = tok.encode(text, true, false);
    StreamingDecoder stream(tok);
    std::string joined;
    size_t held_back = 0;
    for (const int32_t id : ids) {
      const std::string chunk = stream.push(id);
      EXPECT_TRUE(ends_on_char_boundary(chunk)) << vocab << " id " << id;
      held_back += tok.piece(id).size() != chunk.size();
      joined += chunk;
    }
    joined += stream.flush();
    EXPECT_EQ(joined, text) << vocab;
    EXPECT_EQ(joined, tok.decode(ids)) << vocab;
    EXPECT_GT(held_back, 0u) << vocab << ": the emoji should need byte tokens held back";
  }
}

TEST(TokenizerStreaming, FlushReturnsAnIncompleteTail) {
  const Tokenizer tok = load_tokenizer("vocab/ggml-vocab-llama-spm.gguf");
  StreamingDecoder stream(tok);
  std::string pushed;
  for (const int32_t id : tok.encode("\xF0\x9F", false, false)) pushed += stream.push(id);
  EXPECT_EQ(pushed, "");
  EXPECT_EQ(stream.flush(), "\xF0\x9F");
  EXPECT_EQ(stream.flush(), "");
}

TEST(TokenizerBadInput, InvalidUtf8BecomesByteTokens) {
  const std::string bad = "ok \xC3(\x80\xFF\xFE\xF0\x9F\x98 end\xED\xA0\x80";
  for (const char* vocab : {kVocabs[0], kVocabs[1]}) {
    const Tokenizer tok = load_tokenizer(vocab);
    const Ids ids = tok.encode(bad, false, false);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ(tok.decode(ids), bad) << vocab;
  }
  const Tokenizer spm = load_tokenizer(kVocabs[0]);
  // Each invalid byte on its own: <0xFF> is id 3 + 0xFF.
  EXPECT_EQ(spm.encode("\xFF", false, false), (Ids{29871, 3 + 0xFF}));
  // starcoder has no token for the mapped bytes 0xFE/0xFF (never in valid UTF-8):
  // they become its unknown token (0, a control token that decodes to nothing).
  const Tokenizer star = load_tokenizer(kVocabs[2]);
  const Ids ids = star.encode(bad, false, false);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 0), 2);
  EXPECT_EQ(star.decode(ids), "ok \xC3(\x80\xF0\x9F\x98 end\xED\xA0\x80");
}

TEST(TokenizerBadInput, NulBytesAndEmptyText) {
  const std::string nul("a\0b\0", 4);
  for (const char* vocab : kVocabs) {
    const Tokenizer tok = load_tokenizer(vocab);
    EXPECT_EQ(tok.decode(tok.encode(nul, false, false)), nul) << vocab;
    EXPECT_TRUE(tok.encode("", false, false).empty()) << vocab;
    EXPECT_TRUE(tok.encode("", false, true).empty()) << vocab;
    EXPECT_EQ(tok.decode(Ids{}), "");
  }
  const Tokenizer spm = load_tokenizer("vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(spm.encode(std::string("\0", 1), false, false), (Ids{29871, 3}));  // ▁ <0x00>
}

std::string ten_megabytes() {
  const std::string unit =
      "Once upon a time, there was a little girl named Lily. 山の上 🦙 12345\n";
  std::string text;
  text.reserve(10 * 1024 * 1024 + unit.size());
  while (text.size() < 10 * 1024 * 1024) text += unit;
  return text;
}

TEST(TokenizerBadInput, TenMegabytesSpmIsNotQuadratic) {
  const Tokenizer tok = load_tokenizer("vocab/ggml-vocab-llama-spm.gguf");
  const std::string text = ten_megabytes();
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = tok.encode(text, false, false);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(s, 60.0);
  EXPECT_GT(ids.size(), text.size() / 8);
  EXPECT_EQ(tok.decode(ids), text);
  // One long run of a single character: the worst case for a naive merge loop.
  const std::string run(2 * 1024 * 1024, 'a');
  EXPECT_EQ(tok.decode(tok.encode(run, false, false)), run);
}

TEST(TokenizerBadInput, OneMegabyteBpe) {
  const Tokenizer tok = load_tokenizer("vocab/ggml-vocab-gpt-2.gguf");
  const std::string text = ten_megabytes().substr(0, 1024 * 1024);
  EXPECT_EQ(tok.decode(tok.encode(text, false, false)), text);
  const std::string spaces(1024 * 1024, ' ');
  EXPECT_EQ(tok.decode(tok.encode(spaces + "x", false, false)), spaces + "x");
}

}  // namespace
}  // namespace polyinfer::test
