// llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf.inp/.out): every
// string must give exactly the recorded ids (add_special = false, parse_special =
// false) and decode back to itself.
#include <gtest/gtest.h>

#include "tokenizer_test_data.hpp"

namespace polyinfer::test {
namespace {

constexpr size_t kVectorCount = 46;

class VocabVectors : public ::testing::TestWithParam<const char*> {
 protected:
  std::string base() const { return std::string("vocab/ggml-vocab-") + GetParam() + ".gguf"; }
};

TEST_P(VocabVectors, EncodeMatchesEveryRecordedVector) {
  const Tokenizer tok = load_tokenizer(base());
  const auto inputs = read_inp(models_dir() + "/" + base() + ".inp");
  const auto expected = read_out(models_dir() + "/" + base() + ".out");
  ASSERT_EQ(inputs.size(), kVectorCount);
  ASSERT_EQ(expected.size(), kVectorCount);
  size_t matched = 0;
  for (size_t i = 0; i < kVectorCount; ++i) {
    const auto ids = tok.encode(inputs[i], false, false);
    EXPECT_EQ(ids, expected[i]) << "vector " << i << ": '" << inputs[i] << "'";
    matched += ids == expected[i];
  }
  EXPECT_EQ(matched, kVectorCount);
}

TEST_P(VocabVectors, DecodeRoundTripsEveryString) {
  const Tokenizer tok = load_tokenizer(base());
  const auto inputs = read_inp(models_dir() + "/" + base() + ".inp");
  const auto expected = read_out(models_dir() + "/" + base() + ".out");
  ASSERT_EQ(inputs.size(), kVectorCount);
  for (size_t i = 0; i < kVectorCount; ++i) {
    EXPECT_EQ(tok.decode(expected[i]), inputs[i]) << "vector " << i;
    EXPECT_EQ(tok.decode(tok.encode(inputs[i], true, false)), inputs[i]) << "vector " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, VocabVectors, ::testing::Values("llama-spm", "gpt-2", "starcoder"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace polyinfer::test
