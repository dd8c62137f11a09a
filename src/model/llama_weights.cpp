#include "model/llama_weights.hpp"

#include <algorithm>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

std::string shape_str(const Shape& ne, int dims) {
  std::string s = "[";
  for (int i = 0; i < dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

class Binder {
 public:
  Binder(const GgufFile& f, pi_buffer whole_file) : f_(f), buffer_(whole_file) {}

  const GgufTensorInfo* find(const std::string& name) const { return f_.find_tensor(name); }

  // A 1-D or 2-D weight of exactly the expected shape ({ne0} or {ne0, ne1}).
  WeightRef get(const std::string& name, int64_t ne0, int64_t ne1 = 1) const {
    const GgufTensorInfo* t = find(name);
    if (t == nullptr)
      throw Error(ErrorCode::kBadModel, f_.name() + ": missing tensor '" + name + "'");
    const Shape want{ne0, ne1, 1, 1};
    const Shape have{t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
    if (have != want) {
      throw Error(ErrorCode::kBadModel, f_.name() + ": tensor '" + name + "' has shape " +
                                            shape_str(have, 4) + ", expected " +
                                            shape_str(want, 4));
    }
    if (!traits(t->type).dequantizable) {
      throw Error(ErrorCode::kUnsupported, f_.name() + ": tensor '" + name + "' has type " +
                                               std::string(type_name(t->type)) +
                                               ", which polyinfer cannot compute yet");
    }
    return {t->type, have, buffer_, f_.data_offset() + t->offset};
  }

  WeightRef optional(const std::string& name, int64_t ne0, int64_t ne1 = 1) const {
    return find(name) ? get(name, ne0, ne1) : WeightRef{GgmlType::F32, {}, nullptr, 0};
  }

 private:
  const GgufFile& f_;
  pi_buffer buffer_;
};

LlamaLayerWeights bind_layer(const Binder& b, const LlamaHParams& hp, int il) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const int64_t q_dim = hp.n_head * hp.head_dim, kv_dim = hp.n_head_kv * hp.head_dim;
  LlamaLayerWeights l;
  l.attn_norm = b.get(p + "attn_norm.weight", hp.n_embd);
  l.wq = b.get(p + "attn_q.weight", hp.n_embd, q_dim);
  l.wk = b.get(p + "attn_k.weight", hp.n_embd, kv_dim);
  l.wv = b.get(p + "attn_v.weight", hp.n_embd, kv_dim);
  l.wo = b.get(p + "attn_output.weight", q_dim, hp.n_embd);
  l.bq = b.optional(p + "attn_q.bias", q_dim);
  l.bk = b.optional(p + "attn_k.bias", kv_dim);
  l.bv = b.optional(p + "attn_v.bias", kv_dim);
  l.ffn_norm = b.get(p + "ffn_norm.weight", hp.n_embd);
  l.ffn_gate = b.get(p + "ffn_gate.weight", hp.n_embd, hp.n_ff);
  l.ffn_up = b.get(p + "ffn_up.weight", hp.n_embd, hp.n_ff);
  l.ffn_down = b.get(p + "ffn_down.weight", hp.n_ff, hp.n_embd);
  return l;
}

// Biases and norms must be F32 (what the element-wise ops take).
void check_f32(const GgufFile& f, const WeightRef& w, const std::string& what) {
  if (w.present() && w.type != GgmlType::F32) {
    throw Error(ErrorCode::kUnsupported, f.name() + ": " + what + " is " +
                                             std::string(type_name(w.type)) + ", expected F32");
  }
}

// Touches every page of the tensor data once so that the first token does not
// pay for page faults, reporting progress as it goes.
void prefault(const GgufFile& f, const LoadProgress& progress) {
  const auto bytes = f.bytes();
  const uint64_t begin = std::min<uint64_t>(f.data_offset(), bytes.size());
  const uint64_t total = bytes.size() - begin;
  constexpr uint64_t kPage = 4096, kChunk = 64ull << 20;
  volatile uint8_t sink = 0;
  for (uint64_t done = 0; done < total;) {
    const uint64_t end = std::min(total, done + kChunk);
    for (uint64_t at = done; at < end; at += kPage) sink = sink + bytes[begin + at];
    done = end;
    if (progress) progress(done, total);
  }
}

}  // namespace

LlamaWeights load_llama_weights(const GgufFile& f, LlamaHParams& hp, const BackendDevice& dev,
                                const LoadProgress& progress) {
  LlamaWeights w;
  // The mapping is read-only; kernels only read weights, the ABI just has no const.
  auto bytes = f.bytes();
  w.storage.push_back(
      DeviceBuffer::wrap_host(dev, const_cast<uint8_t*>(bytes.data()), bytes.size()));
  if (w.storage.back().handle() == nullptr) {
    throw Error(ErrorCode::kUnsupported,
                dev.name() + " cannot map host memory; uploading weights is not implemented yet");
  }
  const Binder b(f, w.storage.back().handle());
  const GgufTensorInfo* embd = b.find("token_embd.weight");
  if (embd == nullptr) {
    throw Error(ErrorCode::kBadModel, f.name() + ": missing tensor 'token_embd.weight'");
  }
  hp.n_vocab = embd->ne[1];
  if (const GgufTensorInfo* gate = b.find("blk.0.ffn_gate.weight")) hp.n_ff = gate->ne[1];
  w.tok_embd = b.get("token_embd.weight", hp.n_embd, hp.n_vocab);
  w.output_norm = b.get("output_norm.weight", hp.n_embd);
  w.output = b.find("output.weight") ? b.get("output.weight", hp.n_embd, hp.n_vocab) : w.tok_embd;
  w.rope_freqs = b.optional("rope_freqs.weight", hp.n_rot / 2);
  check_f32(f, w.output_norm, "output_norm.weight");
  check_f32(f, w.rope_freqs, "rope_freqs.weight");
  for (int il = 0; il < hp.n_layer; ++il) {
    w.layers.push_back(bind_layer(b, hp, il));
    const LlamaLayerWeights& l = w.layers.back();
    for (const WeightRef* r : {&l.attn_norm, &l.ffn_norm, &l.bq, &l.bk, &l.bv}) {
      check_f32(f, *r, "blk." + std::to_string(il) + " norm/bias");
    }
  }
  prefault(f, progress);
  return w;
}

}  // namespace polyinfer
