// Model shapes that `polyinfer gen-model` can synthesise: the hyper-parameters of
// real checkpoints (Llama-3.2-1B, Llama-3-8B, Qwen2-0.5B) and a tiny one for tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace polyinfer {

struct ModelPreset {
  std::string name;  // "llama-1b", ...
  std::string arch;  // general.architecture: "llama" or "qwen2"
  int64_t n_embd;
  int64_t n_layer;
  int64_t n_head;
  int64_t n_head_kv;
  int64_t n_ff;
  int64_t n_vocab;  // 0: as many tokens as the synthetic tokenizer learns
  float rope_freq_base;
  float rms_norm_eps;
  int64_t n_ctx;
  bool tied_embeddings;  // no output.weight: the output projection reuses token_embd
  bool qkv_bias;         // attn_q/k/v.bias (qwen2)

  int64_t head_dim() const { return n_embd / n_head; }
};

// Names of the presets, in a fixed order (for help texts and errors).
std::vector<std::string> preset_names();

// The preset `name` with the caller's choices applied: `arch` must match a big
// preset's architecture and picks llama or qwen2 for "tiny"; `n_vocab` overrides the
// vocabulary size. Throws Error(kInvalidArgument) with a one-line reason.
ModelPreset resolve_preset(const std::string& name, const std::optional<std::string>& arch,
                           const std::optional<int64_t>& n_vocab);

}  // namespace polyinfer
