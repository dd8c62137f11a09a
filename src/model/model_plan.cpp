// The tensor list and metadata of a synthetic model: names, shapes and keys as
// llama.cpp's loader expects them (llama-arch.cpp, llama-model.cpp).
#include <span>

#include "polyinfer/gen_model.hpp"
#include "polyinfer/synthetic_tokenizer.hpp"

namespace polyinfer {
namespace {

class PlanBuilder {
 public:
  explicit PlanBuilder(ModelPlan& plan) : plan_(plan) {}

  void tensor(const std::string& name, std::vector<int64_t> ne, WeightKind kind, int layer,
              bool is_output = false) {
    const TensorRole role{
        name,     static_cast<int>(ne.size()), ne[0], layer, static_cast<int>(plan_.preset.n_layer),
        is_output};
    const GgmlType type = tensor_type(plan_.file_type, role);
    int64_t rows = 1;
    for (size_t d = 1; d < ne.size(); ++d) rows *= ne[d];
    const uint64_t bytes = row_size(type, ne[0]) * static_cast<uint64_t>(rows);
    plan_.tensors.push_back({name, type, std::move(ne), kind, bytes});
  }

  void set(const std::string& key, GgufValue v) { plan_.metadata.push_back({key, std::move(v)}); }

 private:
  ModelPlan& plan_;
};

void add_block(PlanBuilder& b, const ModelPreset& p, int i) {
  const std::string pre = "blk." + std::to_string(i) + ".";
  const int64_t q_dim = p.n_head * p.head_dim();
  const int64_t kv_dim = p.n_head_kv * p.head_dim();
  b.tensor(pre + "attn_norm.weight", {p.n_embd}, WeightKind::kNorm, i);
  b.tensor(pre + "attn_q.weight", {p.n_embd, q_dim}, WeightKind::kMatrix, i);
  if (p.qkv_bias) b.tensor(pre + "attn_q.bias", {q_dim}, WeightKind::kBias, i);
  b.tensor(pre + "attn_k.weight", {p.n_embd, kv_dim}, WeightKind::kMatrix, i);
  if (p.qkv_bias) b.tensor(pre + "attn_k.bias", {kv_dim}, WeightKind::kBias, i);
  b.tensor(pre + "attn_v.weight", {p.n_embd, kv_dim}, WeightKind::kMatrix, i);
  if (p.qkv_bias) b.tensor(pre + "attn_v.bias", {kv_dim}, WeightKind::kBias, i);
  b.tensor(pre + "attn_output.weight", {q_dim, p.n_embd}, WeightKind::kMatrix, i);
  b.tensor(pre + "ffn_norm.weight", {p.n_embd}, WeightKind::kNorm, i);
  b.tensor(pre + "ffn_gate.weight", {p.n_embd, p.n_ff}, WeightKind::kMatrix, i);
  b.tensor(pre + "ffn_up.weight", {p.n_embd, p.n_ff}, WeightKind::kMatrix, i);
  b.tensor(pre + "ffn_down.weight", {p.n_ff, p.n_embd}, WeightKind::kMatrix, i);
}

void add_tensors(PlanBuilder& b, const ModelPreset& p) {
  b.tensor("token_embd.weight", {p.n_embd, p.n_vocab}, WeightKind::kMatrix, -1, p.tied_embeddings);
  for (int i = 0; i < p.n_layer; ++i) add_block(b, p, i);
  b.tensor("output_norm.weight", {p.n_embd}, WeightKind::kNorm, -1);
  if (!p.tied_embeddings) {
    b.tensor("output.weight", {p.n_embd, p.n_vocab}, WeightKind::kMatrix, -1, true);
  }
}

GgufValue u32(int64_t v) {
  return GgufValue::u32(static_cast<uint32_t>(v));
}

void add_hparams(PlanBuilder& b, const ModelPlan& plan) {
  const ModelPreset& p = plan.preset;
  const std::string a = p.arch + ".";
  b.set("general.architecture", GgufValue::string(p.arch));
  b.set("general.name", GgufValue::string("polyinfer synthetic " + p.name));
  b.set("general.file_type", GgufValue::u32(llama_ftype_id(plan.file_type)));
  b.set("general.quantization_version", GgufValue::u32(2));
  b.set(a + "context_length", u32(p.n_ctx));
  b.set(a + "embedding_length", u32(p.n_embd));
  b.set(a + "feed_forward_length", u32(p.n_ff));
  b.set(a + "block_count", u32(p.n_layer));
  b.set(a + "attention.head_count", u32(p.n_head));
  b.set(a + "attention.head_count_kv", u32(p.n_head_kv));
  b.set(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(p.rms_norm_eps));
  b.set(a + "rope.freq_base", GgufValue::f32(p.rope_freq_base));
  b.set(a + "rope.dimension_count", u32(p.head_dim()));
  b.set(a + "vocab_size", u32(p.n_vocab));
  b.set("polyinfer.synthetic.seed", GgufValue::u64(plan.seed));
}

void add_tokenizer(PlanBuilder& b, const std::string& arch, SyntheticTokenizer t) {
  b.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
  b.set("tokenizer.ggml.pre", GgufValue::string(arch == "qwen2" ? "qwen2" : "llama-bpe"));
  b.set("tokenizer.ggml.tokens", GgufValue::string_array(std::move(t.tokens)));
  b.set("tokenizer.ggml.token_type",
        GgufValue::array(GgufValueType::INT32, std::span<const int32_t>(t.token_types)));
  b.set("tokenizer.ggml.merges", GgufValue::string_array(std::move(t.merges)));
  b.set("tokenizer.ggml.bos_token_id", GgufValue::u32(t.bos_id));
  b.set("tokenizer.ggml.eos_token_id", GgufValue::u32(t.eos_id));
  b.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
}

}  // namespace

int64_t PlannedTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

uint64_t ModelPlan::n_params() const {
  uint64_t n = 0;
  for (const PlannedTensor& t : tensors) n += static_cast<uint64_t>(t.n_elements());
  return n;
}

uint64_t ModelPlan::data_bytes() const {
  uint64_t n = 0;
  for (const PlannedTensor& t : tensors) n += t.n_bytes;
  return n;
}

ModelPlan plan_model(const GenModelOptions& opts) {
  ModelPlan plan{resolve_preset(opts.preset, opts.arch, opts.n_vocab),
                 parse_file_type(opts.type),
                 opts.seed,
                 {},
                 {}};
  SyntheticTokenizer tok = build_synthetic_tokenizer(plan.preset.n_vocab);
  plan.preset.n_vocab = static_cast<int64_t>(tok.tokens.size());
  PlanBuilder b(plan);
  add_hparams(b, plan);
  add_tokenizer(b, plan.preset.arch, std::move(tok));
  add_tensors(b, plan.preset);
  return plan;
}

}  // namespace polyinfer
