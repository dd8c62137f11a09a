// Hyper-parameters of a llama-family model (llama, qwen2) as the forward pass
// needs them, read from "<arch>.*" GGUF keys (names from llama.cpp's
// llama-arch.cpp / gguf-py constants.py) and checked for consistency.
#pragma once
#include <cstdint>
#include <string>

#include "polyinfer/gguf.hpp"

namespace polyinfer {

struct LlamaHParams {
  std::string arch;  // "llama" or "qwen2"
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0;
  int64_t n_vocab = 0, n_ctx_train = 0;
  float rms_eps = 1e-5f;
  // RoPE (ggml semantics): mode 0 adjacent pairs (llama), 2 NeoX halves (qwen2).
  int32_t rope_mode = 0, n_rot = 0, n_ctx_orig = 0;
  float rope_base = 10000.0f, freq_scale = 1.0f, ext_factor = 0.0f, attn_factor = 1.0f;
  float beta_fast = 32.0f, beta_slow = 1.0f;
};

// The architectures this runtime runs.
bool is_supported_arch(const std::string& arch);

// Throws Error(kUnsupported) for another architecture ("unsupported model
// architecture 'X' (supported: llama, qwen2)"), Error(kBadModel) when a
// required key is missing or inconsistent.
LlamaHParams read_llama_hparams(const GgufFile& file);

}  // namespace polyinfer
