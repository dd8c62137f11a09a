// What a GGUF says about the model it holds: hyper-parameters from the
// "<arch>.*" keys and a tokenizer summary from "tokenizer.ggml.*" (key names as in
// llama.cpp's llama-arch.cpp / gguf-py constants.py). Fields a file lacks are nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "polyinfer/gguf.hpp"

namespace polyinfer {

struct ModelHParams {
  std::string arch;  // general.architecture ("" when absent)
  std::optional<std::string> name;
  std::optional<uint64_t> context_length;
  std::optional<uint64_t> n_embd;
  std::optional<uint64_t> n_ff;
  std::optional<uint64_t> n_layer;
  std::optional<uint64_t> n_head;
  std::optional<uint64_t> n_head_kv;  // defaults to n_head when absent (as llama.cpp)
  std::optional<uint64_t> head_dim;   // attention.key_length, else n_embd / n_head
  std::optional<uint64_t> n_rot;      // rope.dimension_count
  std::optional<double> rope_freq_base;
  bool rope_freq_base_default = false;  // true when the key is absent (base 10000)
  std::optional<double> rms_norm_eps;
  std::optional<uint64_t> n_vocab;  // <arch>.vocab_size, else the token count
  std::optional<uint64_t> file_type;
};

struct TokenizerSummary {
  std::optional<std::string> model;  // "llama" (SPM), "gpt2" (BPE), ...
  std::optional<std::string> pre;
  uint64_t n_tokens = 0;
  uint64_t n_merges = 0;
  bool has_scores = false;
  bool has_token_types = false;
  std::optional<uint64_t> bos, eos, eot, unk, pad;
  std::optional<bool> add_bos, add_eos;
};

// Throws Error(kTypeMismatch) when a key has an unusable type.
ModelHParams read_hparams(const GgufFile& file);
TokenizerSummary read_tokenizer_summary(const GgufFile& file);
// "SPM" for llama, "BPE" for gpt2, ... ("" when unknown).
std::string tokenizer_kind(const std::string& model);

}  // namespace polyinfer
