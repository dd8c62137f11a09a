#include "polyinfer/model_info.hpp"

namespace polyinfer {

ModelHParams read_hparams(const GgufFile& f) {
  ModelHParams h;
  h.arch = f.get_string("general.architecture").value_or("");
  h.name = f.get_string("general.name");
  h.file_type = f.get_uint("general.file_type");
  const std::string p = h.arch + ".";
  h.context_length = f.get_uint(p + "context_length");
  h.n_embd = f.get_uint(p + "embedding_length");
  h.n_ff = f.get_uint(p + "feed_forward_length");
  h.n_layer = f.get_uint(p + "block_count");
  h.n_head = f.get_uint(p + "attention.head_count");
  h.n_head_kv = f.get_uint(p + "attention.head_count_kv");
  if (!h.n_head_kv) h.n_head_kv = h.n_head;
  h.head_dim = f.get_uint(p + "attention.key_length");
  if (!h.head_dim && h.n_embd && h.n_head && *h.n_head > 0) h.head_dim = *h.n_embd / *h.n_head;
  h.n_rot = f.get_uint(p + "rope.dimension_count");
  h.rope_freq_base = f.get_float(p + "rope.freq_base");
  if (!h.rope_freq_base) {
    h.rope_freq_base = 10000.0;
    h.rope_freq_base_default = true;
  }
  h.rms_norm_eps = f.get_float(p + "attention.layer_norm_rms_epsilon");
  h.n_vocab = f.get_uint(p + "vocab_size");
  if (!h.n_vocab) {
    if (const GgufValue* toks = f.find("tokenizer.ggml.tokens"); toks && toks->is_array()) {
      h.n_vocab = toks->array_size();
    }
  }
  return h;
}

namespace {

uint64_t array_len(const GgufFile& f, const char* key) {
  const GgufValue* v = f.find(key);
  return v != nullptr && v->is_array() ? v->array_size() : 0;
}

}  // namespace

TokenizerSummary read_tokenizer_summary(const GgufFile& f) {
  TokenizerSummary t;
  t.model = f.get_string("tokenizer.ggml.model");
  t.pre = f.get_string("tokenizer.ggml.pre");
  t.n_tokens = array_len(f, "tokenizer.ggml.tokens");
  t.n_merges = array_len(f, "tokenizer.ggml.merges");
  t.has_scores = f.find("tokenizer.ggml.scores") != nullptr;
  t.has_token_types = f.find("tokenizer.ggml.token_type") != nullptr;
  t.bos = f.get_uint("tokenizer.ggml.bos_token_id");
  t.eos = f.get_uint("tokenizer.ggml.eos_token_id");
  t.eot = f.get_uint("tokenizer.ggml.eot_token_id");
  t.unk = f.get_uint("tokenizer.ggml.unknown_token_id");
  t.pad = f.get_uint("tokenizer.ggml.padding_token_id");
  t.add_bos = f.get_bool("tokenizer.ggml.add_bos_token");
  t.add_eos = f.get_bool("tokenizer.ggml.add_eos_token");
  return t;
}

std::string tokenizer_kind(const std::string& model) {
  if (model == "llama") return "SPM";
  if (model == "gpt2") return "BPE";
  if (model == "bert") return "WPM";
  if (model == "t5") return "UGM";
  if (model == "rwkv") return "RWKV";
  return "";
}

}  // namespace polyinfer
