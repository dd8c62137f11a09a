#include "model/llama_graph.hpp"

#include <cmath>

namespace polyinfer {
namespace {

class Builder {
 public:
  Builder(Graph& g, const LlamaHParams& hp) : g_(g), hp_(hp) {}

  TensorId weight(const WeightRef& w) {
    return g_.bound(w.type, w.ne, w.buffer, w.offset, w.device);
  }

  // [K, M] activations times a [K, N] weight: [N, M].
  TensorId mul_mat(const WeightRef& w, TensorId x) {
    const Shape& xs = g_.tensor(x).ne;
    return op(PI_OP_MUL_MAT, {weight(w), x}, {w.ne[1], xs[1], xs[2], xs[3]});
  }
  TensorId add_bias(TensorId x, const WeightRef& b) {
    return b.present() ? op(PI_OP_ADD, {x, weight(b)}, g_.tensor(x).ne) : x;
  }
  TensorId norm(TensorId x, const WeightRef& w) {
    const float eps[] = {hp_.rms_eps};
    const TensorId n = g_.op(PI_OP_RMS_NORM, ids({x}), GgmlType::F32, g_.tensor(x).ne, {}, eps);
    return op(PI_OP_MUL, {n, weight(w)}, g_.tensor(x).ne);
  }
  TensorId rope(TensorId x, TensorId pos, const WeightRef& freqs) {
    const int32_t ip[] = {hp_.rope_mode, hp_.n_rot, hp_.n_ctx_orig};
    const float fp[] = {hp_.rope_base,   hp_.freq_scale, hp_.ext_factor,
                        hp_.attn_factor, hp_.beta_fast,  hp_.beta_slow};
    const TensorId f = freqs.present() ? weight(freqs) : -1;
    const TensorId srcs[] = {x, pos, f};
    return g_.op(PI_OP_ROPE, srcs, GgmlType::F32, g_.tensor(x).ne, ip, fp);
  }
  TensorId op(pi_op o, std::initializer_list<TensorId> srcs, const Shape& ne) {
    return g_.op(o, ids(srcs), GgmlType::F32, ne);
  }
  static std::span<const TensorId> ids(std::initializer_list<TensorId> l) {
    return {l.begin(), l.size()};
  }

  Graph& g() { return g_; }

 private:
  Graph& g_;
  const LlamaHParams& hp_;
};

struct Inputs {
  TensorId pos, mask;
  int64_t n_tokens, n_past, n_kv;
};

TensorId attention(Builder& b, const LlamaHParams& hp, const LlamaLayerWeights& l,
                   const KvCache& kv, int il, TensorId x, const Inputs& in) {
  Graph& g = b.g();
  const int64_t n = in.n_tokens, d = hp.head_dim;
  TensorId q = b.add_bias(b.mul_mat(l.wq, x), l.bq);
  TensorId k = b.add_bias(b.mul_mat(l.wk, x), l.bk);
  const TensorId v = b.add_bias(b.mul_mat(l.wv, x), l.bv);
  q = b.rope(g.reshape(q, {d, hp.n_head, n, 1}), in.pos, l.rope_freqs);
  k = b.rope(g.reshape(k, {d, hp.n_head_kv, n, 1}), in.pos, l.rope_freqs);
  const TensorId cpy_k[] = {k};
  g.op_into(PI_OP_CPY, cpy_k, kv.k_slot(g, il, in.n_past, n));
  const TensorId cpy_v[] = {g.reshape(v, {d, hp.n_head_kv, n, 1})};
  g.op_into(PI_OP_CPY, cpy_v, kv.v_slot(g, il, in.n_past, n));
  // q [D, H, T] seen as [D, T, H]: the layout FLASH_ATTN takes.
  const Strides qs{4, static_cast<uint64_t>(hp.n_head * d * 4), static_cast<uint64_t>(d * 4),
                   static_cast<uint64_t>(hp.n_head * d * 4 * n)};
  const TensorId qp = g.view(q, {d, n, hp.n_head, 1}, qs, 0);
  const float scale[] = {1.0f / std::sqrt(static_cast<float>(d))};
  const TensorId srcs[] = {qp, kv.k_view(g, il, in.n_kv), kv.v_view(g, il, in.n_kv), in.mask};
  const TensorId o = g.op(PI_OP_FLASH_ATTN, srcs, GgmlType::F32, {d, hp.n_head, n, 1}, {}, scale);
  return b.mul_mat(l.wo, g.reshape(o, {d * hp.n_head, n, 1, 1}));
}

TensorId feed_forward(Builder& b, const LlamaLayerWeights& l, TensorId x) {
  const TensorId gate = b.mul_mat(l.ffn_gate, x);
  const TensorId up = b.mul_mat(l.ffn_up, x);
  const TensorId act = b.op(PI_OP_SWIGLU, {gate, up}, b.g().tensor(gate).ne);
  return b.mul_mat(l.ffn_down, act);
}

}  // namespace

ForwardGraph build_llama_graph(const LlamaHParams& hp, const LlamaWeights& w, const KvCache& kv,
                               int64_t n_tokens, int64_t n_past, bool all_logits) {
  ForwardGraph fg;
  Graph& g = fg.graph;
  Builder b(g, hp);
  fg.n_kv = n_past + n_tokens;
  fg.tokens = g.input(GgmlType::I32, {n_tokens, 1, 1, 1});
  fg.positions = g.input(GgmlType::I32, {n_tokens, 1, 1, 1});
  fg.mask = g.input(GgmlType::F32, {fg.n_kv, n_tokens, 1, 1});
  const Inputs in{fg.positions, fg.mask, n_tokens, n_past, fg.n_kv};

  // Each node wishes to run where its layer's weights are (the scheduler decides).
  g.set_device(w.tok_embd.device);
  const TensorId ids[] = {b.weight(w.tok_embd), fg.tokens};
  TensorId x = g.op(PI_OP_GET_ROWS, ids, GgmlType::F32, {hp.n_embd, n_tokens, 1, 1});
  for (int il = 0; il < hp.n_layer; ++il) {
    const LlamaLayerWeights& l = w.layers[il];
    g.set_device(l.attn_norm.device);
    const TensorId attn = attention(b, hp, l, kv, il, b.norm(x, l.attn_norm), in);
    x = b.op(PI_OP_ADD, {x, attn}, g.tensor(x).ne);
    const TensorId ffn = feed_forward(b, l, b.norm(x, l.ffn_norm));
    x = b.op(PI_OP_ADD, {x, ffn}, g.tensor(x).ne);
  }
  if (!all_logits && n_tokens > 1) {
    const uint64_t row = static_cast<uint64_t>(hp.n_embd) * 4;
    x = g.view(x, {hp.n_embd, 1, 1, 1}, {4, row, row, row}, row * (n_tokens - 1));
  }
  g.set_device(w.output.device);
  fg.logits = b.mul_mat(w.output, b.norm(x, w.output_norm));
  g.mark_output(fg.logits);
  return fg;
}

}  // namespace polyinfer
