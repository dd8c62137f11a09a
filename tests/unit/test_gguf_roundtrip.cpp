// GGUF writer -> reader round trips, and the reader on the real shared models.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gguf_sample.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/gguf.hpp"
#include "polyinfer/gguf_writer.hpp"

namespace polyinfer {
namespace {

const std::string kModels = POLYINFER_MODELS_DIR;

void expect_roundtrip(uint64_t seed, uint32_t alignment) {
  GgufWriter w(alignment);
  const auto data = testing::build_sample(seed, w);
  const std::vector<uint8_t> bytes = testing::sample_bytes(seed, alignment);
  const GgufFile f = GgufFile::parse(bytes, "sample");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), alignment);
  EXPECT_EQ(f.data_offset() % alignment, 0u);
  ASSERT_EQ(f.metadata().size(), w.metadata().size());
  for (size_t i = 0; i < f.metadata().size(); ++i) {
    EXPECT_EQ(f.metadata()[i].key, w.metadata()[i].key);
    EXPECT_TRUE(f.metadata()[i].value == w.metadata()[i].value) << w.metadata()[i].key;
  }
  ASSERT_EQ(f.tensors().size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    const GgufTensorInfo& got = f.tensors()[i];
    const GgufTensorInfo& want = w.tensors()[i];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.n_dims, want.n_dims);
    EXPECT_EQ(got.ne, want.ne);
    EXPECT_EQ(got.offset % alignment, 0u);
    const auto span = f.tensor_data(got);
    EXPECT_EQ(std::vector<uint8_t>(span.begin(), span.end()), data[i]) << got.name;
  }
  // The file ends exactly at the padded end of the last tensor.
  const GgufTensorInfo& last = f.tensors().back();
  EXPECT_EQ(f.file_size(),
            f.data_offset() + (last.offset + last.n_bytes + alignment - 1) / alignment * alignment);
}

TEST(GgufRoundTrip, EveryValueTypeAndTensorTypeDefaultAlignment) {
  for (uint64_t seed : {1u, 2u, 3u}) expect_roundtrip(seed, 32);
}

TEST(GgufRoundTrip, CustomAlignmentIsWrittenAndHonoured) {
  expect_roundtrip(7, 64);
  expect_roundtrip(8, 4096);
  const std::vector<uint8_t> bytes = testing::sample_bytes(9, 256);
  const GgufFile f = GgufFile::parse(bytes, "sample");
  ASSERT_NE(f.find("general.alignment"), nullptr);
  EXPECT_EQ(f.get_uint("general.alignment"), 256u);
}

TEST(GgufRoundTrip, TypedGettersConvertAndRejectMismatches) {
  const std::vector<uint8_t> bytes = testing::sample_bytes(4);
  const GgufFile f = GgufFile::parse(bytes, "sample");
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_FALSE(f.get_uint("no.such.key").has_value());
  EXPECT_TRUE(f.get_float("sample.f32").has_value());
  EXPECT_TRUE(f.get_bool("sample.bool").has_value());
  try {
    f.get_uint("general.architecture");
    FAIL() << "expected a type mismatch";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTypeMismatch);
  }
}

TEST(GgufWriter, RejectsDuplicatesBadShapesAndMissingData) {
  GgufWriter w;
  w.set("a", GgufValue::u32(1));
  EXPECT_THROW(w.set("a", GgufValue::u32(2)), Error);
  w.add_tensor("t", GgmlType::Q8_0, {64, 2});
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {4}), Error);
  EXPECT_THROW(w.add_tensor("u", GgmlType::Q8_0, {33}), Error);
  EXPECT_THROW(w.add_tensor("v", GgmlType::F32, {1, 1, 1, 1, 1}), Error);
  EXPECT_THROW(GgufWriter(48), Error);
  VectorSink sink;
  w.begin(sink);
  std::vector<uint8_t> half(68, 0x5A);
  w.write_data(half.data(), half.size());
  EXPECT_THROW(w.finish(), Error);
  w.write_data(half.data(), half.size());
  w.finish();
  EXPECT_THROW(w.write_data(half.data(), 1), Error);
}

TEST(GgufRealModels, Stories260K) {
  const GgufFile f = GgufFile::open(kModels + "/stories260K.gguf");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 19u);
  EXPECT_EQ(f.data_offset(), 14176u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_uint("llama.block_count"), 5u);
  ASSERT_EQ(f.tensors().size(), 48u);
  uint64_t params = 0;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.type, GgmlType::F32);
    params += static_cast<uint64_t>(t.n_elements());
  }
  EXPECT_EQ(params, 292800u);
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
  // The last tensor ends exactly at the end of the file.
  const GgufTensorInfo& last = f.tensors().back();
  EXPECT_EQ(f.data_offset() + last.offset + last.n_bytes, f.file_size());
}

TEST(GgufRealModels, TinyStoriesQ8_0) {
  const GgufFile f = GgufFile::open(kModels + "/TinyStories-656K-Q8_0.gguf");
  EXPECT_EQ(f.tensors().size(), 20u);
  EXPECT_EQ(f.data_offset(), 50848u);
  int q8 = 0;
  for (const auto& t : f.tensors()) q8 += t.type == GgmlType::Q8_0;
  EXPECT_EQ(q8, 15);
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
}

TEST(GgufRealModels, VocabOnlyFilesEndBeforeTheAlignedDataOffset) {
  for (const char* name :
       {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-starcoder.gguf"}) {
    const GgufFile f = GgufFile::open(kModels + "/vocab/" + name);
    EXPECT_TRUE(f.tensors().empty()) << name;
    EXPECT_GT(f.data_offset(), f.file_size()) << name;
    const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr) << name;
    EXPECT_GE(tokens->array_size(), 32000u) << name;
  }
}

TEST(GgufRealModels, MissingFileIsAnIoError) {
  try {
    GgufFile::open(kModels + "/no-such-model.gguf");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("no-such-model.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace polyinfer
