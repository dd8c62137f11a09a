#include "model/llama_hparams.hpp"

#include "polyinfer/error.hpp"
#include "polyinfer/model_info.hpp"

namespace polyinfer {
namespace {

constexpr int32_t kRopeNormal = 0;
constexpr int32_t kRopeNeox = 2;

int64_t required(const std::optional<uint64_t>& v, const GgufFile& f, const std::string& key) {
  if (!v || *v == 0 || *v > (1ull << 31)) {
    throw Error(ErrorCode::kBadModel, f.name() + ": missing or invalid metadata key " + key);
  }
  return static_cast<int64_t>(*v);
}

// Linear and YaRN context extension (rope.scaling.*), as llama.cpp applies them.
void read_rope_scaling(const GgufFile& f, LlamaHParams& hp) {
  const std::string p = hp.arch + ".rope.scaling.";
  const std::string type = f.get_string(p + "type").value_or("none");
  const double factor = f.get_float(p + "factor").value_or(0.0);
  if (type != "none" && factor > 0) hp.freq_scale = static_cast<float>(1.0 / factor);
  if (type == "yarn") hp.ext_factor = 1.0f;
  if (auto orig = f.get_uint(p + "original_context_length")) {
    hp.n_ctx_orig = static_cast<int32_t>(*orig);
  }
  if (type != "none" && type != "linear" && type != "yarn" && type != "llama3") {
    throw Error(ErrorCode::kUnsupported,
                f.name() + ": unsupported RoPE scaling type '" + type + "'");
  }
}

}  // namespace

bool is_supported_arch(const std::string& arch) {
  return arch == "llama" || arch == "qwen2";
}

LlamaHParams read_llama_hparams(const GgufFile& f) {
  const ModelHParams m = read_hparams(f);
  if (m.arch.empty()) {
    throw Error(
        ErrorCode::kBadModel,
        f.name() + ": not a model (no general.architecture key; a vocab-only or data file?)");
  }
  if (!is_supported_arch(m.arch)) {
    throw Error(ErrorCode::kUnsupported, f.name() + ": unsupported model architecture '" + m.arch +
                                             "' (supported: llama, qwen2)");
  }
  LlamaHParams hp;
  hp.arch = m.arch;
  const std::string a = m.arch + ".";
  hp.n_embd = required(m.n_embd, f, a + "embedding_length");
  hp.n_layer = required(m.n_layer, f, a + "block_count");
  hp.n_head = required(m.n_head, f, a + "attention.head_count");
  hp.n_head_kv = required(m.n_head_kv, f, a + "attention.head_count_kv");
  hp.head_dim = required(m.head_dim, f, a + "attention.key_length");
  hp.n_vocab = required(m.n_vocab, f, a + "vocab_size");
  hp.n_ctx_train = m.context_length.value_or(2048);
  hp.n_ff = static_cast<int64_t>(m.n_ff.value_or(0));
  hp.rms_eps = static_cast<float>(m.rms_norm_eps.value_or(1e-5));
  hp.rope_base = static_cast<float>(m.rope_freq_base.value_or(10000.0));
  hp.n_rot = static_cast<int32_t>(m.n_rot.value_or(static_cast<uint64_t>(hp.head_dim)));
  hp.rope_mode = hp.arch == "qwen2" ? kRopeNeox : kRopeNormal;
  hp.n_ctx_orig = static_cast<int32_t>(hp.n_ctx_train);
  read_rope_scaling(f, hp);
  if (hp.n_head % hp.n_head_kv != 0 || hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0) {
    throw Error(ErrorCode::kBadModel,
                f.name() + ": inconsistent attention shape (heads " + std::to_string(hp.n_head) +
                    ", kv heads " + std::to_string(hp.n_head_kv) + ", rope dims " +
                    std::to_string(hp.n_rot) + ", head dim " + std::to_string(hp.head_dim) + ")");
  }
  return hp;
}

}  // namespace polyinfer
