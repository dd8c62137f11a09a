#include "info_report.hpp"

#include <map>

#include "gguf_json.hpp"
#include "polyinfer/model_info.hpp"

namespace polyinfer::cli {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json hparams_json(const ModelHParams& h) {
  return Json{{"context_length", opt(h.context_length)},
              {"embedding_length", opt(h.n_embd)},
              {"feed_forward_length", opt(h.n_ff)},
              {"block_count", opt(h.n_layer)},
              {"head_count", opt(h.n_head)},
              {"head_count_kv", opt(h.n_head_kv)},
              {"head_dim", opt(h.head_dim)},
              {"rope_dimension_count", opt(h.n_rot)},
              {"rope_freq_base", opt(h.rope_freq_base)},
              {"rope_freq_base_is_default", h.rope_freq_base_default},
              {"layer_norm_rms_epsilon", opt(h.rms_norm_eps)},
              {"vocab_size", opt(h.n_vocab)},
              {"file_type", opt(h.file_type)}};
}

Json tokenizer_json(const TokenizerSummary& t) {
  return Json{{"model", opt(t.model)},
              {"kind", t.model ? Json(tokenizer_kind(*t.model)) : Json(nullptr)},
              {"pre", opt(t.pre)},
              {"n_tokens", t.n_tokens},
              {"n_merges", t.n_merges},
              {"has_scores", t.has_scores},
              {"has_token_types", t.has_token_types},
              {"bos_token_id", opt(t.bos)},
              {"eos_token_id", opt(t.eos)},
              {"eot_token_id", opt(t.eot)},
              {"unknown_token_id", opt(t.unk)},
              {"padding_token_id", opt(t.pad)},
              {"add_bos_token", opt(t.add_bos)},
              {"add_eos_token", opt(t.add_eos)}};
}

Json shape_json(const GgufTensorInfo& t) {
  Json shape = Json::array();
  for (uint32_t d = 0; d < t.n_dims; ++d) shape.push_back(t.ne[d]);
  return shape;
}

Json tensor_summary(const GgufFile& f, Json& out) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_type;  // count, bytes
  uint64_t params = 0;
  for (const GgufTensorInfo& t : f.tensors()) {
    auto& e = by_type[std::string(type_name(t.type))];
    e.first += 1;
    e.second += t.n_bytes;
    params += static_cast<uint64_t>(t.n_elements());
  }
  out["n_tensors"] = f.tensors().size();
  out["n_params"] = params;
  Json types = Json::object();
  for (const auto& [name, e] : by_type) types[name] = {{"count", e.first}, {"bytes", e.second}};
  return types;
}

// A metadata value for display: arrays longer than 8 are cut, with their length.
Json value_json(const GgufValue& v) {
  if (!v.is_array()) return scalar_json(v);
  Json items = Json::array();
  const size_t n = v.array_size();
  for (size_t i = 0; i < n && i < 8; ++i) items.push_back(value_json(v.element(i)));
  return Json{{"type", "ARRAY"},
              {"element_type", std::string(value_type_name(v.array_type()))},
              {"length", n},
              {"head", items}};
}

}  // namespace

nlohmann::ordered_json info_report(const GgufFile& f, const InfoOptions& opts) {
  const ModelHParams h = read_hparams(f);
  Json out;
  out["file"] = f.name();
  out["file_size"] = f.file_size();
  out["gguf_version"] = f.version();
  out["alignment"] = f.alignment();
  out["data_offset"] = f.data_offset();
  out["n_metadata"] = f.metadata().size();
  out["architecture"] = h.arch;
  out["name"] = opt(h.name);
  out["hparams"] = hparams_json(h);
  out["tokenizer"] = tokenizer_json(read_tokenizer_summary(f));
  out["tensor_types"] = tensor_summary(f, out);
  if (opts.metadata) {
    Json md = Json::array();
    for (const GgufKv& kv : f.metadata()) {
      md.push_back({{"key", kv.key},
                    {"type", std::string(value_type_name(kv.value.type()))},
                    {"value", value_json(kv.value)}});
    }
    out["metadata"] = md;
  }
  if (opts.tensors) {
    Json ts = Json::array();
    for (const GgufTensorInfo& t : f.tensors()) {
      ts.push_back({{"name", t.name},
                    {"type", std::string(type_name(t.type))},
                    {"shape", shape_json(t)},
                    {"offset", f.data_offset() + t.offset},
                    {"bytes", t.n_bytes}});
    }
    out["tensors"] = ts;
  }
  return out;
}

}  // namespace polyinfer::cli
