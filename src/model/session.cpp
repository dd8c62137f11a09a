#include "polyinfer/session.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <vector>

#include "backend/device.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "graph/executor.hpp"
#include "model/kv_cache.hpp"
#include "model/llama_graph.hpp"
#include "model/llama_hparams.hpp"
#include "model/llama_weights.hpp"
#include "model/model_summary.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/gguf.hpp"

namespace polyinfer {

namespace {

constexpr int64_t kDefaultMaxCtx = 4096;

std::string device_options(const SessionParams& p) {
  // -t comes first: backends read the first occurrence of a key, and the
  // command line beats the config file's options.
  std::string o = p.n_threads > 0 ? "threads=" + std::to_string(p.n_threads) : "";
  if (!p.device_options.empty()) o += (o.empty() ? "" : ";") + p.device_options;
  return o;
}

const pi_backend_vtable& backend_of(const SessionParams& p) {
  return p.backend ? *p.backend : *polyinfer_cpu_backend_entry();
}

int64_t context_size(const SessionParams& p, const LlamaHParams& hp) {
  if (p.n_ctx < 0) throw Error(ErrorCode::kInvalidArgument, "context size must be positive");
  if (p.n_ctx > 0) return p.n_ctx;
  return std::min<int64_t>(hp.n_ctx_train > 0 ? hp.n_ctx_train : kDefaultMaxCtx, kDefaultMaxCtx);
}

}  // namespace

struct Session::Impl {
  Impl(const std::string& path, const SessionParams& p)
      : file(GgufFile::open(path)),
        hp(read_llama_hparams(file)),
        tokenizer(Tokenizer::from_gguf(file)),
        summary(summarize_model(file)),
        device(backend_of(p), p.device_index, device_options(p)),
        weights(load_llama_weights(file, hp, device, p.progress)),
        n_ctx(context_size(p, hp)),
        n_batch(p.n_batch),
        kv(device, hp, n_ctx, p.cache_type),
        exec(device),
        n_threads(p.n_threads > 0 ? p.n_threads : cpu::physical_core_count()) {
    if (n_batch < 1) throw Error(ErrorCode::kInvalidArgument, "batch size must be at least 1");
    summary.n_vocab = hp.n_vocab;
  }

  void check_tokens(std::span<const int32_t> tokens) const {
    if (tokens.empty()) throw Error(ErrorCode::kInvalidArgument, "no tokens to evaluate");
    for (int32_t id : tokens) {
      if (id < 0 || id >= hp.n_vocab) {
        throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(id) +
                                                     " is outside the vocabulary (0.." +
                                                     std::to_string(hp.n_vocab - 1) + ")");
      }
    }
    if (n_past + static_cast<int64_t>(tokens.size()) > n_ctx) {
      throw Error(ErrorCode::kContextFull,
                  "context full: " + std::to_string(n_past) + " tokens in the cache + " +
                      std::to_string(tokens.size()) + " new exceed the context size " +
                      std::to_string(n_ctx) + " (raise it with -c)");
    }
  }

  // One forward pass; logits of all its tokens (or its last) appended to `out`.
  void forward(std::span<const int32_t> tokens, bool all_logits, std::vector<float>& out) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    ForwardGraph fg = build_llama_graph(hp, weights, kv, n, n_past, all_logits);
    std::vector<int32_t> pos(n);
    for (int64_t i = 0; i < n; ++i) pos[i] = static_cast<int32_t>(n_past + i);
    std::vector<float> mask(static_cast<size_t>(fg.n_kv * n));
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t j = 0; j < fg.n_kv; ++j) {
        mask[t * fg.n_kv + j] = j <= n_past + t ? 0.0f : -std::numeric_limits<float>::infinity();
      }
    }
    const HostInput inputs[] = {
        {fg.tokens, tokens.data()}, {fg.positions, pos.data()}, {fg.mask, mask.data()}};
    exec.run(fg.graph, inputs);
    const size_t at = out.size();
    out.resize(at + fg.graph.nbytes(fg.logits) / sizeof(float));
    exec.read(fg.graph, fg.logits, out.data() + at);
    n_past += n;
  }

  GgufFile file;
  LlamaHParams hp;
  Tokenizer tokenizer;
  ModelSummary summary;
  BackendDevice device;
  LlamaWeights weights;
  int64_t n_ctx;
  int64_t n_batch;
  KvCache kv;
  GraphExecutor exec;
  int n_threads;
  int64_t n_past = 0;
  std::vector<float> logits;
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Session::open(const std::string& path, const SessionParams& params) {
  return std::unique_ptr<Session>(new Session(std::make_unique<Impl>(path, params)));
}

const Tokenizer& Session::tokenizer() const {
  return impl_->tokenizer;
}
const ModelSummary& Session::model() const {
  return impl_->summary;
}
int64_t Session::n_ctx() const {
  return impl_->n_ctx;
}
int64_t Session::n_batch() const {
  return impl_->n_batch;
}
int64_t Session::n_past() const {
  return impl_->n_past;
}
int Session::n_threads() const {
  return impl_->n_threads;
}
std::string Session::backend_name() const {
  return "CPU";
}
std::string Session::device_desc() const {
  const pi_device_info& i = impl_->device.info();
  return impl_->device.name() + " " + i.name + " (" + i.compute_version + "), " +
         std::to_string(n_threads()) + " threads";
}
uint64_t Session::kv_cache_bytes() const {
  return impl_->kv.bytes();
}
uint64_t Session::compute_bytes() const {
  return impl_->exec.arena_bytes();
}

std::span<const float> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
  Impl& s = *impl_;
  s.check_tokens(tokens);
  s.logits.clear();
  for (size_t at = 0; at < tokens.size(); at += static_cast<size_t>(s.n_batch)) {
    const size_t n = std::min(tokens.size() - at, static_cast<size_t>(s.n_batch));
    const bool last = at + n == tokens.size();
    std::vector<float> discard;
    s.forward(tokens.subspan(at, n), all_logits, all_logits || last ? s.logits : discard);
  }
  return s.logits;
}

void Session::reset() {
  impl_->n_past = 0;
}

}  // namespace polyinfer
