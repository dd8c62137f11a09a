// llama.cpp's tensor-type recipe (llama_tensor_get_type) as gen-model applies it.
#include <gtest/gtest.h>

#include <set>

#include "polyinfer/error.hpp"
#include "polyinfer/gen_model.hpp"
#include "polyinfer/tensor_recipe.hpp"

namespace polyinfer {
namespace {

TensorRole matrix(const std::string& name, int64_t ne0, int layer = 0, int n_layer = 16) {
  return {name, 2, ne0, layer, n_layer, false};
}
TensorRole output(int64_t ne0) {
  return {"output.weight", 2, ne0, -1, 16, true};
}

std::set<int> more_bits_layers(int n_layer) {
  std::set<int> out;
  for (int i = 0; i < n_layer; ++i) {
    if (use_more_bits(i, n_layer)) out.insert(i);
  }
  return out;
}

TEST(TensorRecipe, UseMoreBitsLayers) {
  // i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2, integer division.
  EXPECT_EQ(more_bits_layers(16), (std::set<int>{0, 1, 4, 7, 10, 13, 14, 15}));
  EXPECT_EQ(more_bits_layers(32),
            (std::set<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
  EXPECT_EQ(more_bits_layers(24), (std::set<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23}));
}

TEST(TensorRecipe, OneDimensionalTensorsAreAlwaysF32) {
  for (const std::string& name : file_type_names()) {
    const FileType ft = parse_file_type(name);
    EXPECT_EQ(tensor_type(ft, {"blk.0.attn_norm.weight", 1, 256, 0, 2, false}), GgmlType::F32);
    EXPECT_EQ(tensor_type(ft, {"blk.0.attn_q.bias", 1, 896, 0, 24, false}), GgmlType::F32);
    EXPECT_EQ(tensor_type(ft, {"output_norm.weight", 1, 4096, -1, 32, false}), GgmlType::F32);
  }
}

TEST(TensorRecipe, UniformTypesApplyToEveryMatrix) {
  const std::pair<FileType, GgmlType> cases[] = {{FileType::F32, GgmlType::F32},
                                                 {FileType::F16, GgmlType::F16},
                                                 {FileType::BF16, GgmlType::BF16},
                                                 {FileType::Q8_0, GgmlType::Q8_0},
                                                 {FileType::Q6_K, GgmlType::Q6_K}};
  for (const auto& [ft, want] : cases) {
    EXPECT_EQ(tensor_type(ft, matrix("token_embd.weight", 4096, -1)), want);
    EXPECT_EQ(tensor_type(ft, matrix("blk.0.attn_v.weight", 4096, 0)), want);
    EXPECT_EQ(tensor_type(ft, matrix("blk.0.ffn_down.weight", 14336, 0)), want);
    EXPECT_EQ(tensor_type(ft, output(4096)), want);
  }
}

TEST(TensorRecipe, Q4_0RaisesOnlyTheOutputToQ6_K) {
  EXPECT_EQ(tensor_type(FileType::Q4_0, output(2048)), GgmlType::Q6_K);
  EXPECT_EQ(tensor_type(FileType::Q4_0, matrix("token_embd.weight", 2048, -1)), GgmlType::Q4_0);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(tensor_type(FileType::Q4_0, matrix("blk.N.attn_v.weight", 2048, i)), GgmlType::Q4_0);
    EXPECT_EQ(tensor_type(FileType::Q4_0, matrix("blk.N.ffn_down.weight", 8192, i)),
              GgmlType::Q4_0);
  }
  // Rows that are not whole K super-blocks get Q8_0 (llama.cpp's output rule).
  EXPECT_EQ(tensor_type(FileType::Q4_0, output(896)), GgmlType::Q8_0);
}

void expect_k_m(FileType ft, GgmlType base, int n_layer) {
  EXPECT_EQ(tensor_type(ft, output(4096)), GgmlType::Q6_K);
  EXPECT_EQ(tensor_type(ft, matrix("token_embd.weight", 4096, -1, n_layer)), base);
  for (int i = 0; i < n_layer; ++i) {
    const GgmlType more = use_more_bits(i, n_layer) ? GgmlType::Q6_K : base;
    const std::string pre = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(tensor_type(ft, matrix(pre + "attn_v.weight", 4096, i, n_layer)), more) << i;
    EXPECT_EQ(tensor_type(ft, matrix(pre + "ffn_down.weight", 14336, i, n_layer)), more) << i;
    EXPECT_EQ(tensor_type(ft, matrix(pre + "attn_q.weight", 4096, i, n_layer)), base) << i;
    EXPECT_EQ(tensor_type(ft, matrix(pre + "attn_k.weight", 4096, i, n_layer)), base) << i;
    EXPECT_EQ(tensor_type(ft, matrix(pre + "attn_output.weight", 4096, i, n_layer)), base) << i;
    EXPECT_EQ(tensor_type(ft, matrix(pre + "ffn_gate.weight", 4096, i, n_layer)), base) << i;
    EXPECT_EQ(tensor_type(ft, matrix(pre + "ffn_up.weight", 4096, i, n_layer)), base) << i;
  }
}

TEST(TensorRecipe, Q4_K_M) {
  expect_k_m(FileType::Q4_K_M, GgmlType::Q4_K, 16);
  expect_k_m(FileType::Q4_K_M, GgmlType::Q4_K, 32);
}

TEST(TensorRecipe, Q5_K_M) {
  expect_k_m(FileType::Q5_K_M, GgmlType::Q5_K, 16);
  expect_k_m(FileType::Q5_K_M, GgmlType::Q5_K, 32);
}

TEST(TensorRecipe, KTypesFallBackWhenRowsAreNotWholeSuperBlocks) {
  // 896 = 3.5 * 256 (Qwen2-0.5B's n_embd).
  EXPECT_EQ(tensor_type(FileType::Q4_K_M, matrix("blk.3.attn_q.weight", 896, 3, 24)),
            GgmlType::Q5_0);
  EXPECT_EQ(tensor_type(FileType::Q5_K_M, matrix("blk.3.attn_q.weight", 896, 3, 24)),
            GgmlType::Q5_1);
  EXPECT_EQ(tensor_type(FileType::Q4_K_M, matrix("blk.0.attn_v.weight", 896, 0, 24)),
            GgmlType::Q8_0);
  EXPECT_EQ(tensor_type(FileType::Q6_K, matrix("blk.0.attn_q.weight", 896, 0, 24)), GgmlType::Q8_0);
  EXPECT_EQ(tensor_type(FileType::Q4_K_M, output(896)), GgmlType::Q8_0);
  // 4864 = 19 * 256: ffn_down keeps its K type.
  EXPECT_EQ(tensor_type(FileType::Q4_K_M, matrix("blk.0.ffn_down.weight", 4864, 0, 24)),
            GgmlType::Q6_K);
  EXPECT_EQ(tensor_type(FileType::Q4_K_M, matrix("blk.3.ffn_down.weight", 4864, 3, 24)),
            GgmlType::Q4_K);
}

TEST(TensorRecipe, TiedEmbeddingsTakeTheOutputType) {
  const ModelPlan plan = plan_model({.preset = "llama-1b", .type = "q4_k_m"});
  bool has_output = false;
  for (const PlannedTensor& t : plan.tensors) {
    has_output |= t.name == "output.weight";
    if (t.name == "token_embd.weight") {
      EXPECT_EQ(t.type, GgmlType::Q6_K);
    }
  }
  EXPECT_FALSE(has_output);
  const ModelPlan untied = plan_model({.preset = "llama-8b", .type = "q4_k_m"});
  EXPECT_EQ(untied.tensors.front().name, "token_embd.weight");
  EXPECT_EQ(untied.tensors.front().type, GgmlType::Q4_K);
  EXPECT_EQ(untied.tensors.back().name, "output.weight");
  EXPECT_EQ(untied.tensors.back().type, GgmlType::Q6_K);
}

TEST(TensorRecipe, FileTypeNamesAndIds) {
  EXPECT_EQ(parse_file_type("Q4_K_M"), FileType::Q4_K_M);
  EXPECT_EQ(llama_ftype_id(FileType::F32), 0u);
  EXPECT_EQ(llama_ftype_id(FileType::F16), 1u);
  EXPECT_EQ(llama_ftype_id(FileType::Q4_0), 2u);
  EXPECT_EQ(llama_ftype_id(FileType::Q8_0), 7u);
  EXPECT_EQ(llama_ftype_id(FileType::Q4_K_M), 15u);
  EXPECT_EQ(llama_ftype_id(FileType::Q5_K_M), 17u);
  EXPECT_EQ(llama_ftype_id(FileType::Q6_K), 18u);
  EXPECT_EQ(llama_ftype_id(FileType::BF16), 32u);
  EXPECT_THROW(parse_file_type("q3_k"), Error);
}

}  // namespace
}  // namespace polyinfer
