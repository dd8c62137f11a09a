#include "model/llama_weights.hpp"

#include <algorithm>
#include <cstdio>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

std::string shape_str(const Shape& ne, int dims) {
  std::string s = "[";
  for (int i = 0; i < dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// Finds and checks tensors; then, depending on the pass, only checks them, tells
// the store which device wants them, or returns where the store put them.
class Binder {
 public:
  enum class Pass { kCheck, kWant, kBind };
  Binder(const GgufFile& f, WeightStore* store, Pass pass) : f_(f), store_(store), pass_(pass) {}

  const GgufTensorInfo* find(const std::string& name) const { return f_.find_tensor(name); }

  // A 1-D or 2-D weight of exactly the expected shape ({ne0} or {ne0, ne1}), on device d.
  WeightRef get(const std::string& name, int d, int64_t ne0, int64_t ne1 = 1) const {
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
    if (pass_ == Pass::kWant) store_->want(*t, d);
    if (pass_ == Pass::kBind) return store_->ref(*t, d);
    return {t->type, have, nullptr, 0, d};
  }

  WeightRef optional(const std::string& name, int d, int64_t ne0, int64_t ne1 = 1) const {
    return find(name) ? get(name, d, ne0, ne1) : WeightRef{GgmlType::F32, {}, nullptr, 0, d};
  }

 private:
  const GgufFile& f_;
  WeightStore* store_;
  Pass pass_;
};

LlamaLayerWeights bind_layer(const Binder& b, const LlamaHParams& hp, int il, int d) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const int64_t q_dim = hp.n_head * hp.head_dim, kv_dim = hp.n_head_kv * hp.head_dim;
  LlamaLayerWeights l;
  l.attn_norm = b.get(p + "attn_norm.weight", d, hp.n_embd);
  l.wq = b.get(p + "attn_q.weight", d, hp.n_embd, q_dim);
  l.wk = b.get(p + "attn_k.weight", d, hp.n_embd, kv_dim);
  l.wv = b.get(p + "attn_v.weight", d, hp.n_embd, kv_dim);
  l.wo = b.get(p + "attn_output.weight", d, q_dim, hp.n_embd);
  l.bq = b.optional(p + "attn_q.bias", d, q_dim);
  l.bk = b.optional(p + "attn_k.bias", d, kv_dim);
  l.bv = b.optional(p + "attn_v.bias", d, kv_dim);
  l.ffn_norm = b.get(p + "ffn_norm.weight", d, hp.n_embd);
  l.ffn_gate = b.get(p + "ffn_gate.weight", d, hp.n_embd, hp.n_ff);
  l.ffn_up = b.get(p + "ffn_up.weight", d, hp.n_embd, hp.n_ff);
  l.ffn_down = b.get(p + "ffn_down.weight", d, hp.n_ff, hp.n_embd);
  l.rope_freqs = b.optional("rope_freqs.weight", d, hp.n_rot / 2);
  return l;
}

// Biases and norms must be F32 (what the element-wise ops take).
void check_f32(const GgufFile& f, const WeightRef& w, const std::string& what) {
  if (w.type != GgmlType::F32) {
    throw Error(ErrorCode::kUnsupported, f.name() + ": " + what + " is " +
                                             std::string(type_name(w.type)) + ", expected F32");
  }
}

// Every tensor of the model, on the devices of the map (all on device 0 without one).
LlamaWeights bind_all(const GgufFile& f, const Binder& b, const LlamaHParams& hp,
                      const LayerMap* map, int cpu) {
  LlamaWeights w;
  const int out = map ? map->output_device : 0;
  w.tok_embd = b.get("token_embd.weight", cpu, hp.n_embd, hp.n_vocab);
  w.output_norm = b.get("output_norm.weight", out, hp.n_embd);
  w.output = b.find("output.weight") ? b.get("output.weight", out, hp.n_embd, hp.n_vocab)
                                     : b.get("token_embd.weight", out, hp.n_embd, hp.n_vocab);
  check_f32(f, w.output_norm, "output_norm.weight");
  for (int il = 0; il < hp.n_layer; ++il) {
    w.layers.push_back(bind_layer(b, hp, il, map ? map->layer_device[il] : 0));
    const LlamaLayerWeights& l = w.layers.back();
    for (const WeightRef* r : {&l.attn_norm, &l.ffn_norm, &l.bq, &l.bk, &l.bv, &l.rope_freqs}) {
      if (r->ne[0] > 0) check_f32(f, *r, "blk." + std::to_string(il) + " norm/bias/rope_freqs");
    }
  }
  return w;
}

}  // namespace

void check_llama_tensors(const GgufFile& f, LlamaHParams& hp) {
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) {
    throw Error(ErrorCode::kBadModel, f.name() + ": missing tensor 'token_embd.weight'");
  }
  hp.n_vocab = embd->ne[1];
  if (const GgufTensorInfo* gate = f.find_tensor("blk.0.ffn_gate.weight")) hp.n_ff = gate->ne[1];
  bind_all(f, Binder(f, nullptr, Binder::Pass::kCheck), hp, nullptr, 0);
}

ModelFootprint llama_footprint(const GgufFile& f, const LlamaHParams& hp,
                               uint64_t kv_bytes_per_layer) {
  ModelFootprint m;
  std::vector<uint64_t> layer(static_cast<size_t>(hp.n_layer), 0);
  for (const GgufTensorInfo& t : f.tensors()) {
    int il = -1;
    if (std::sscanf(t.name.c_str(), "blk.%d.", &il) == 1 && il >= 0 && il < hp.n_layer)
      layer[static_cast<size_t>(il)] += t.n_bytes;
  }
  for (uint64_t b : layer) m.layer_bytes = std::max(m.layer_bytes, b + kv_bytes_per_layer);
  const GgufTensorInfo* out = f.find_tensor("output.weight");
  if (out == nullptr) out = f.find_tensor("token_embd.weight");
  m.output_bytes = out->n_bytes + f.find_tensor("output_norm.weight")->n_bytes;
  return m;
}

LlamaWeights load_llama_weights(const GgufFile& f, const LlamaHParams& hp,
                                const std::vector<const BackendDevice*>& devices,
                                const LayerMap& map, const LoadProgress& progress) {
  const int cpu = static_cast<int>(devices.size()) - 1;
  auto store = std::make_unique<WeightStore>(f, devices);
  bind_all(f, Binder(f, store.get(), Binder::Pass::kWant), hp, &map, cpu);
  store->load(progress);
  LlamaWeights w = bind_all(f, Binder(f, store.get(), Binder::Pass::kBind), hp, &map, cpu);
  w.store = std::move(store);
  return w;
}

}  // namespace polyinfer
