// `polyinfer gen-model`: a synthetic GGUF model with real shapes, seeded random
// weights, a working BPE tokenizer and llama.cpp's tensor-type recipe, streamed to
// disk chunk by chunk (multi-GB models never sit in memory).
//
//   ModelPlan plan = plan_model({.preset = "llama-1b", .type = "q4_k_m", .seed = 1});
//   GenModelStats s = write_model(plan, "out.gguf", nullptr);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "polyinfer/gguf.hpp"
#include "polyinfer/model_preset.hpp"
#include "polyinfer/synthetic_weights.hpp"
#include "polyinfer/tensor_recipe.hpp"

namespace polyinfer {

struct GenModelOptions {
  std::string preset = "tiny";
  std::optional<std::string> arch = std::nullopt;  // default: the preset's
  std::string type = "f16";
  uint64_t seed = 0;
  std::optional<int64_t> n_vocab = std::nullopt;  // default: the preset's
};

struct PlannedTensor {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;  // ggml order
  WeightKind kind;
  uint64_t n_bytes;
  int64_t n_elements() const;
};

struct ModelPlan {
  ModelPreset preset;  // with the vocabulary size filled in
  FileType file_type;
  uint64_t seed;
  std::vector<GgufKv> metadata;
  std::vector<PlannedTensor> tensors;
  uint64_t n_params() const;
  uint64_t data_bytes() const;
};

// Throws Error(kInvalidArgument) for an unknown preset, type or arch.
ModelPlan plan_model(const GenModelOptions& opts);

struct GenModelStats {
  uint64_t file_bytes;
  double seconds;
};

// Called from the writing thread after each chunk: bytes of tensor data written so
// far, and in all.
using GenProgress = std::function<void(uint64_t done, uint64_t total)>;

// Writes the model to path (opened before any work; removed again on failure).
// n_threads = 0: std::thread::hardware_concurrency().
GenModelStats write_model(const ModelPlan& plan, const std::string& path,
                          const GenProgress& progress, unsigned n_threads = 0);

}  // namespace polyinfer
