// Greedy generation on the real models in ../shared/models reproduces the
// reference generations of oracles.json (llama2.c and llama.cpp runs): the
// token ids through Session::eval + argmax, the text through generate().
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "polyinfer/generate.hpp"
#include "polyinfer/session.hpp"

namespace polyinfer {
namespace {

const std::string kModels = POLYINFER_MODELS_DIR;

nlohmann::json oracle_cases() {
  std::ifstream in(kModels + "/oracles.json");
  if (!in) ADD_FAILURE() << "missing " << kModels << "/oracles.json";
  return nlohmann::json::parse(in)["cases"];
}

std::vector<int32_t> greedy_ids(Session& s, const std::vector<int32_t>& prompt, int n) {
  std::vector<int32_t> out;
  std::span<const float> logits = s.eval(prompt);
  for (int i = 0; i < n; ++i) {
    out.push_back(
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    if (i + 1 < n) logits = s.eval(std::span<const int32_t>(&out.back(), 1));
  }
  return out;
}

class Oracles : public ::testing::TestWithParam<int64_t> {};

TEST_P(Oracles, GreedyIdsAndTextMatch) {
  const nlohmann::json cases = oracle_cases();
  ASSERT_EQ(cases.size(), 3u);
  for (const nlohmann::json& c : cases) {
    SCOPED_TRACE(c["model"].get<std::string>() + " prompt '" + c["prompt"].get<std::string>() +
                 "'");
    SessionParams p;
    p.n_batch = GetParam();
    auto s = Session::open(kModels + "/" + c["model"].get<std::string>(), p);
    const auto prompt = c["prompt_ids"].get<std::vector<int32_t>>();
    const int n = c["n_generated"].get<int>();
    EXPECT_EQ(s->tokenizer().encode(c["prompt"].get<std::string>(), true, true), prompt);
    EXPECT_EQ(greedy_ids(*s, prompt, n), c["generated_ids"].get<std::vector<int32_t>>());

    s->reset();
    GenerateOptions o;
    o.n_predict = n;
    o.sampling.temp = 0;
    std::string text;
    const GenerationStats st = generate(*s, prompt, o, [&](std::string_view t) { text += t; });
    EXPECT_EQ(text, c["expected_text"].get<std::string>());
    EXPECT_EQ(st.n_generated, n);
  }
}

// Batch 512 (the whole prompt at once) and 2 (several forward passes per prompt).
INSTANTIATE_TEST_SUITE_P(Batch, Oracles, ::testing::Values(512, 2));

}  // namespace
}  // namespace polyinfer
