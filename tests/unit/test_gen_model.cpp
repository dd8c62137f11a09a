// gen-model end to end: tiny models written, read back with GgufFile and checked
// against what llama.cpp's loader expects; weights seeded, chunk- and
// thread-independent, with the documented scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "polyinfer/error.hpp"
#include "polyinfer/gen_model.hpp"

namespace polyinfer {
namespace {

namespace fs = std::filesystem;

class GenModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("polyinfer_gen_model_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const GenModelOptions& opts, const std::string& file, unsigned threads = 0) {
    const std::string path = (dir_ / file).string();
    write_model(plan_model(opts), path, nullptr, threads);
    return path;
  }

  fs::path dir_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<float> floats(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  EXPECT_EQ(t->type, GgmlType::F32);
  const auto bytes = f.tensor_data(*t);
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

void mean_std(const std::vector<float>& v, double& mean, double& std) {
  double s = 0, s2 = 0;
  for (float x : v) s += x;
  mean = s / static_cast<double>(v.size());
  for (float x : v) s2 += (x - mean) * (x - mean);
  std = std::sqrt(s2 / static_cast<double>(v.size()));
}

using Shape = std::vector<int64_t>;

// Every tensor llama.cpp's llama/qwen2 loader reads, with its shape.
std::map<std::string, Shape> expected_tensors(bool qwen2, int64_t n_vocab) {
  std::map<std::string, Shape> m{{"token_embd.weight", {256, n_vocab}},
                                 {"output_norm.weight", {256}},
                                 {"output.weight", {256, n_vocab}}};
  for (int i = 0; i < 2; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    m[p + "attn_norm.weight"] = {256};
    m[p + "attn_q.weight"] = {256, 256};
    m[p + "attn_k.weight"] = {256, 128};
    m[p + "attn_v.weight"] = {256, 128};
    m[p + "attn_output.weight"] = {256, 256};
    m[p + "ffn_norm.weight"] = {256};
    m[p + "ffn_gate.weight"] = {256, 512};
    m[p + "ffn_up.weight"] = {256, 512};
    m[p + "ffn_down.weight"] = {512, 256};
    if (qwen2) {
      m[p + "attn_q.bias"] = {256};
      m[p + "attn_k.bias"] = {128};
      m[p + "attn_v.bias"] = {128};
    }
  }
  return m;
}

void expect_layout(const GgufFile& f, bool qwen2) {
  const std::string a = qwen2 ? "qwen2." : "llama.";
  const uint64_t vocab = *f.get_uint(a + "vocab_size");
  EXPECT_EQ(f.find("tokenizer.ggml.tokens")->array_size(), vocab);
  std::map<std::string, Shape> got;
  for (const GgufTensorInfo& t : f.tensors()) {
    got[t.name] = Shape(t.ne.begin(), t.ne.begin() + t.n_dims);
    EXPECT_EQ(t.type, GgmlType::F32) << t.name;
  }
  EXPECT_EQ(got, expected_tensors(qwen2, static_cast<int64_t>(vocab)));
}

void expect_metadata(const GgufFile& f, const std::string& arch, uint64_t seed) {
  const std::string a = arch + ".";
  EXPECT_EQ(f.get_string("general.architecture"), arch);
  EXPECT_EQ(f.get_uint("general.file_type"), 0u);
  EXPECT_EQ(f.get_uint("general.quantization_version"), 2u);
  EXPECT_EQ(f.get_uint(a + "context_length"), 512u);
  EXPECT_EQ(f.get_uint(a + "embedding_length"), 256u);
  EXPECT_EQ(f.get_uint(a + "feed_forward_length"), 512u);
  EXPECT_EQ(f.get_uint(a + "block_count"), 2u);
  EXPECT_EQ(f.get_uint(a + "attention.head_count"), 4u);
  EXPECT_EQ(f.get_uint(a + "attention.head_count_kv"), 2u);
  EXPECT_FLOAT_EQ(static_cast<float>(*f.get_float(a + "attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(f.get_float(a + "rope.freq_base"), 10000.0);
  EXPECT_EQ(f.get_uint(a + "rope.dimension_count"), 64u);
  EXPECT_EQ(f.get_uint("polyinfer.synthetic.seed"), seed);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), arch == "qwen2" ? "qwen2" : "llama-bpe");
  EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token"), true);
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens->strings()[*f.get_uint("tokenizer.ggml.bos_token_id")], "<|begin_of_text|>");
  EXPECT_EQ(tokens->strings()[*f.get_uint("tokenizer.ggml.eos_token_id")], "<|end_of_text|>");
  EXPECT_GT(f.find("tokenizer.ggml.merges")->array_size(), 100u);
}

TEST_F(GenModelTest, TinyLlamaF32ReadsBack) {
  const GgufFile f = GgufFile::open(write({.preset = "tiny", .type = "f32", .seed = 7}, "l.gguf"));
  expect_layout(f, false);
  expect_metadata(f, "llama", 7);
}

TEST_F(GenModelTest, TinyQwen2F32ReadsBack) {
  const GgufFile f = GgufFile::open(
      write({.preset = "tiny", .arch = "qwen2", .type = "f32", .seed = 7}, "q.gguf"));
  expect_layout(f, true);
  expect_metadata(f, "qwen2", 7);
  double mean, std;
  mean_std(floats(f, "blk.0.attn_q.bias"), mean, std);
  EXPECT_NEAR(std, kBiasStd, 0.2 * kBiasStd);  // 256 samples
}

TEST_F(GenModelTest, SameSeedSameBytesOtherSeedOtherWeights) {
  const std::string a = slurp(write({.preset = "tiny", .type = "f16", .seed = 1}, "a.gguf", 1));
  const std::string b = slurp(write({.preset = "tiny", .type = "f16", .seed = 1}, "b.gguf", 3));
  const std::string c = slurp(write({.preset = "tiny", .type = "f16", .seed = 2}, "c.gguf"));
  EXPECT_EQ(a, b);  // also independent of the thread count
  ASSERT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
}

TEST_F(GenModelTest, WeightsHaveTheDocumentedScales) {
  const GgufFile f = GgufFile::open(write({.preset = "tiny", .type = "f32", .seed = 3}, "s.gguf"));
  for (const GgufTensorInfo& t : f.tensors()) {
    const std::vector<float> v = floats(f, t.name);
    for (float x : v) ASSERT_NE(x, 0.0f) << t.name;
    double mean, std;
    mean_std(v, mean, std);
    if (t.n_dims == 1) {  // norms: 1 + N(0, 0.02); 256 samples
      EXPECT_NEAR(mean, 1.0, 0.01) << t.name;
      EXPECT_NEAR(std, kNormJitter, 0.2 * kNormJitter) << t.name;
    } else {  // >= 32768 samples: the sample std is within ~1% of the true one
      const double want = 1.0 / std::sqrt(static_cast<double>(t.ne[0]));
      EXPECT_NEAR(mean, 0.0, 0.05 * want) << t.name;
      EXPECT_NEAR(std, want, 0.03 * want) << t.name;
    }
  }
}

TEST(SyntheticWeights, RowsDoNotDependOnChunking) {
  const uint64_t key = tensor_stream_key(5, "blk.0.ffn_up.weight");
  std::vector<float> whole(10 * 64), parts(10 * 64);
  fill_weight_rows(WeightKind::kMatrix, key, 64, 0, 10, whole.data());
  fill_weight_rows(WeightKind::kMatrix, key, 64, 0, 3, parts.data());
  fill_weight_rows(WeightKind::kMatrix, key, 64, 3, 7, parts.data() + 3 * 64);
  EXPECT_EQ(whole, parts);
  EXPECT_NE(key, tensor_stream_key(5, "blk.0.ffn_gate.weight"));
  EXPECT_NE(key, tensor_stream_key(6, "blk.0.ffn_up.weight"));
}

TEST_F(GenModelTest, QuantizedTypesFollowThePlan) {
  for (const char* type : {"q8_0", "q4_0", "q4_k_m", "q5_k_m", "q6_k"}) {
    const ModelPlan plan = plan_model({.preset = "tiny", .type = type, .seed = 1});
    const std::string path = (dir_ / (std::string(type) + ".gguf")).string();
    write_model(plan, path, nullptr);
    const GgufFile f = GgufFile::open(path);
    ASSERT_EQ(f.tensors().size(), plan.tensors.size());
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
      EXPECT_EQ(f.tensors()[i].name, plan.tensors[i].name);
      EXPECT_EQ(f.tensors()[i].type, plan.tensors[i].type) << type << " " << plan.tensors[i].name;
      EXPECT_EQ(f.tensors()[i].n_bytes, plan.tensors[i].n_bytes);
    }
  }
}

TEST_F(GenModelTest, UnwritablePathFailsWithIoError) {
  try {
    write({.preset = "tiny", .type = "f32"}, "missing/dir/x.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
}

TEST(GenModelPlan, BigPresetsHaveTheRealShapes) {
  const ModelPlan l8 = plan_model({.preset = "llama-8b", .type = "f16"});
  EXPECT_EQ(l8.n_params(), 8030261248u);  // Meta-Llama-3-8B
  EXPECT_EQ(l8.tensors.size(), 2u + 32u * 9u + 1u);
  const ModelPlan l1 = plan_model({.preset = "llama-1b", .type = "f16"});
  EXPECT_EQ(l1.preset.n_vocab, 32000);
  const ModelPlan l1v = plan_model({.preset = "llama-1b", .type = "f16", .n_vocab = 128256});
  EXPECT_EQ(l1v.n_params(), 1235814400u);  // Llama-3.2-1B
  const ModelPlan q = plan_model({.preset = "qwen2-0.5b", .type = "f16"});
  EXPECT_EQ(q.n_params(), 494032768u);  // Qwen2-0.5B
  EXPECT_EQ(q.tensors.size(), 2u + 24u * 12u);
}

TEST(GenModelPlan, RejectsBadChoices) {
  EXPECT_THROW(plan_model({.preset = "llama-70b"}), Error);
  EXPECT_THROW(plan_model({.preset = "tiny", .type = "q2_k"}), Error);
  EXPECT_THROW(plan_model({.preset = "tiny", .arch = "mistral"}), Error);
  EXPECT_THROW(plan_model({.preset = "qwen2-0.5b", .arch = "llama"}), Error);
  EXPECT_THROW(plan_model({.preset = "tiny", .n_vocab = 100}), Error);
  EXPECT_NO_THROW(plan_model({.preset = "qwen2-0.5b", .arch = "qwen2"}));
}

}  // namespace
}  // namespace polyinfer
