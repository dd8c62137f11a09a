// The TinyStories models' prompt ids from oracles.json (add_special = true, so BOS
// is included) and the decoded text of their greedy generations.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer_test_data.hpp"

namespace polyinfer::test {
namespace {

nlohmann::json oracle_cases() {
  const auto doc = nlohmann::json::parse(read_all(models_dir() + "/oracles.json"));
  return doc.at("cases");
}

TEST(TokenizerOracles, PromptIdsOfBothModels) {
  const auto cases = oracle_cases();
  ASSERT_EQ(cases.size(), 3u);
  size_t checked = 0;
  for (const auto& c : cases) {
    const Tokenizer tok = load_tokenizer(c.at("model").get<std::string>());
    const auto prompt = c.at("prompt").get<std::string>();
    const auto expected = c.at("prompt_ids").get<std::vector<int32_t>>();
    EXPECT_EQ(tok.encode(prompt, true, true), expected) << c.at("model") << " '" << prompt << "'";
    EXPECT_EQ(tok.encode(prompt, true, false), expected) << c.at("model") << " '" << prompt << "'";
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
}

TEST(TokenizerOracles, TinyStoriesLeftmostTieBreak) {
  // Every score is -1000, so merges go leftmost first: "▁ On ce▁ upon▁a▁tim e".
  const Tokenizer tok = load_tokenizer("TinyStories-656K-Q8_0.gguf");
  EXPECT_EQ(tok.encode("Once upon a time", true, false),
            (std::vector<int32_t>{1, 80, 147, 201, 282, 57}));
  EXPECT_EQ(tok.piece(201), "ce ");
}

TEST(TokenizerOracles, GeneratedIdsDecodeToExpectedText) {
  for (const auto& c : oracle_cases()) {
    const Tokenizer tok = load_tokenizer(c.at("model").get<std::string>());
    auto ids = c.at("prompt_ids").get<std::vector<int32_t>>();
    const auto generated = c.at("generated_ids").get<std::vector<int32_t>>();
    ids.insert(ids.end(), generated.begin(), generated.end());
    const std::string expected =
        c.at("prompt").get<std::string>() + c.at("expected_text").get<std::string>();
    EXPECT_EQ(tok.decode(ids), expected) << c.at("model");
  }
}

}  // namespace
}  // namespace polyinfer::test
