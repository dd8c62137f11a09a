#include "polyinfer/session.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "backend/device.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "graph/executor.hpp"
#include "graph/memory_plan.hpp"
#include "graph/scheduler.hpp"
#include "model/kv_cache.hpp"
#include "model/llama_graph.hpp"
#include "model/llama_hparams.hpp"
#include "model/llama_weights.hpp"
#include "model/model_summary.hpp"
#include "model/placement_report.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/gguf.hpp"

namespace polyinfer {

namespace {

constexpr int64_t kDefaultMaxCtx = 4096;
using Clock = std::chrono::steady_clock;

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string cpu_options(const SessionParams& p) {
  // -t comes first: backends read the first occurrence of a key, and the
  // command line beats the config file's options.
  std::string o = p.n_threads > 0 ? "threads=" + std::to_string(p.n_threads) : "";
  if (!p.cpu_options.empty()) o += (o.empty() ? "" : ";") + p.cpu_options;
  return o;
}

// The accelerators asked for, then the CPU.
std::vector<std::unique_ptr<BackendDevice>> open_devices(const SessionParams& p) {
  std::vector<std::unique_ptr<BackendDevice>> devs;
  for (const DeviceSpec& d : p.devices) {
    if (d.backend == nullptr || d.backend == polyinfer_cpu_backend_entry()) continue;
    devs.push_back(std::make_unique<BackendDevice>(*d.backend, d.index, d.options));
  }
  devs.push_back(
      std::make_unique<BackendDevice>(*polyinfer_cpu_backend_entry(), 0, cpu_options(p)));
  return devs;
}

std::vector<const BackendDevice*> pointers(const std::vector<std::unique_ptr<BackendDevice>>& v) {
  std::vector<const BackendDevice*> out;
  for (const auto& d : v) out.push_back(d.get());
  return out;
}

std::vector<SchedDevice> sched_devices(const std::vector<const BackendDevice*>& devs) {
  std::vector<SchedDevice> out;
  for (const BackendDevice* d : devs) {
    out.push_back({d->name(), [d](const pi_node& n) { return d->supports(n); }});
  }
  return out;
}

LlamaHParams checked_hparams(const GgufFile& f) {
  LlamaHParams hp = read_llama_hparams(f);
  check_llama_tensors(f, hp);
  return hp;
}

int64_t context_size(const SessionParams& p, const LlamaHParams& hp) {
  if (p.n_ctx < 0) throw Error(ErrorCode::kInvalidArgument, "context size must be positive");
  if (p.n_ctx > 0) return p.n_ctx;
  return std::min<int64_t>(hp.n_ctx_train > 0 ? hp.n_ctx_train : kDefaultMaxCtx, kDefaultMaxCtx);
}

// A forward pass's graph, scheduled, with its memory plan.
struct Step {
  int64_t n_tokens = 0, n_past = 0;
  bool all_logits = false;
  ForwardGraph fg;
  ScheduledGraph sg;
  MemoryPlan plan;
};

}  // namespace

struct Session::Impl {
  Impl(const std::string& path, const SessionParams& p)
      : file(GgufFile::open(path)),
        hp(checked_hparams(file)),
        tokenizer(Tokenizer::from_gguf(file)),
        summary(summarize_model(file)),
        n_ctx(context_size(p, hp)),
        n_batch(p.n_batch),
        owned(open_devices(p)),
        devices(pointers(owned)),
        map(place(p)),
        weights(load_llama_weights(file, hp, devices, map, p.progress)),
        kv(devices, map.layer_device, hp, n_ctx, p.cache_type),
        exec(devices),
        sched_devs(sched_devices(devices)),
        sched(ScheduleOptions::from_environment(static_cast<int>(devices.size()) - 1)),
        notice(p.notice),
        n_threads(p.n_threads > 0 ? p.n_threads : cpu::physical_core_count()) {
    if (n_batch < 1) throw Error(ErrorCode::kInvalidArgument, "batch size must be at least 1");
    summary.n_vocab = hp.n_vocab;
  }

  LayerMap place(const SessionParams& p) const {
    if (p.cache_type != GgmlType::F32 && p.cache_type != GgmlType::F16 &&
        p.cache_type != GgmlType::Q8_0) {
      throw Error(ErrorCode::kInvalidArgument, "KV cache type must be f32, f16 or q8_0");
    }
    std::vector<PlacementDevice> pd;
    for (const BackendDevice* d : devices) {
      pd.push_back({d->name(), d->info().memory_free, d->info().memory_total});
    }
    const ModelFootprint size =
        llama_footprint(file, hp, KvCache::layer_bytes(hp, n_ctx, p.cache_type));
    return place_layers(static_cast<int>(hp.n_layer), size, pd, p.placement);
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

  // Builds the graph of a pass of n tokens at position `past`; its host time
  // goes to times.build_ms and times.schedule_ms. Returns that time.
  double build_step(int64_t n, int64_t past, bool all_logits, Step& step) {
    const auto t0 = Clock::now();
    step =
        Step{n, past, all_logits, build_llama_graph(hp, weights, kv, n, past, all_logits), {}, {}};
    const auto t1 = Clock::now();
    step.sg = schedule(step.fg.graph, sched_devs, sched);
    step.plan = plan_memory(step.sg.graph, static_cast<int>(devices.size()));
    const auto t2 = Clock::now();
    times.build_ms += ms(t0, t1);
    times.schedule_ms += ms(t1, t2);
    return ms(t0, t2);
  }

  // The graph of the pass at n_past: the one built ahead if it matches
  // (*was_ahead).
  Step take_step(int64_t n, bool all_logits, bool* was_ahead) {
    Step step;
    *was_ahead =
        ahead && ahead->n_tokens == n && ahead->n_past == n_past && ahead->all_logits == all_logits;
    if (*was_ahead)
      step = std::move(*ahead);
    else
      build_step(n, n_past, all_logits, step);
    ahead.reset();
    return step;
  }

  // While the devices run a one-token pass, the host builds the next one's
  // graph (a decode step's graph depends on its position, not its token):
  // 0.06 ms per token on llama-1b and 0.2 ms on llama-8b that the GPU no
  // longer waits for. Returns the host time it took.
  double build_ahead(int64_t n, bool all_logits) {
    if (n != 1 || n_past + 2 > n_ctx) return 0;
    ahead.emplace();
    try {
      const auto t0 = Clock::now();
      build_step(1, n_past + 1, all_logits, *ahead);
      exec.prepare(ahead->sg.graph, ahead->plan);
      return ms(t0, Clock::now());
    } catch (const Error&) {
      ahead.reset();  // the next pass builds its own graph, and reports what fails
      return 0;
    }
  }

  // One forward pass. With all_logits, appends the logits of all its tokens
  // to `logits`. Otherwise, with `want`, returns its last token's logits in
  // the executor's read-back memory: page-locked by the GPU that computes
  // them, so that a decode step's logits come back by DMA (a prompt's logits
  // of every token go to pageable memory: a page-locked 263 MB for llama-8b's
  // 512 would stay locked for the session). Without, reads nothing (a prompt
  // chunk before the last).
  std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits, bool want) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    bool was_ahead = false;
    Step step = take_step(n, all_logits, &was_ahead);
    const ForwardGraph& fg = step.fg;
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
    report(step.sg.notes);
    const auto t2 = Clock::now();
    if (was_ahead && exec.prepared())
      exec.start_prepared(step.sg.graph, inputs);
    else
      exec.start(step.sg.graph, std::move(step.plan), inputs);
    const double ahead_ms = build_ahead(n, all_logits);
    const auto t3 = Clock::now();
    // The logits before finish(): buffer_read waits for its stream's earlier
    // work itself, so the last node and the copy back cost one wait, not a
    // wait and then a copy submitted after it (on Vulkan a second round trip
    // to the GPU, 60-120 us per token on the H200).
    std::span<const float> last;
    if (all_logits) {
      const size_t at = logits.size();
      logits.resize(at + step.sg.graph.nbytes(fg.logits) / sizeof(float));
      exec.read(step.sg.graph, fg.logits, logits.data() + at);
    } else if (want) {
      const std::span<const uint8_t> b = exec.read_back(step.sg.graph, fg.logits);
      last = {reinterpret_cast<const float*>(b.data()), b.size() / sizeof(float)};
    }
    exec.finish();
    n_past += n;
    const auto t4 = Clock::now();
    times.passes += 1;
    times.run_ms += ms(t2, t3) - ahead_ms;
    times.read_ms += ms(t3, t4);
    return last;
  }

  void report(const std::vector<std::string>& notes) {
    for (const std::string& line : notes) {
      if (noticed.insert(line).second && notice) notice(line);
    }
  }

  GgufFile file;
  LlamaHParams hp;
  Tokenizer tokenizer;
  ModelSummary summary;
  int64_t n_ctx;
  int64_t n_batch;
  std::vector<std::unique_ptr<BackendDevice>> owned;  // accelerators, then the CPU
  std::vector<const BackendDevice*> devices;          // graph device numbers
  LayerMap map;
  LlamaWeights weights;
  KvCache kv;
  GraphExecutor exec;
  std::vector<SchedDevice> sched_devs;
  ScheduleOptions sched;
  std::function<void(const std::string&)> notice;
  std::set<std::string> noticed;
  int n_threads;
  ForwardTimes times;
  int64_t n_past = 0;
  std::optional<Step> ahead;  // the next decode step's graph (build_ahead)
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
  std::string name = n_gpu_layers() > 0 ? impl_->devices.front()->vt().name : "cpu";
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}
std::string Session::device_desc() const {
  std::string s;
  const auto& devs = impl_->devices;
  for (size_t d = 0; d < devs.size(); ++d) {
    const bool cpu = d + 1 == devs.size();
    if (!cpu && impl_->weights.store->bytes_on(static_cast<int>(d)) == 0) continue;
    const pi_device_info& i = devs[d]->info();
    s += (s.empty() ? "" : " + ") + devs[d]->name() + " " + i.name + " (" + i.compute_version +
         ")" + (cpu ? ", " + std::to_string(n_threads()) + " threads" : "");
  }
  return s;
}
uint64_t Session::kv_cache_bytes() const {
  return impl_->kv.bytes();
}
uint64_t Session::compute_bytes() const {
  uint64_t sum = 0;
  for (size_t d = 0; d < impl_->devices.size(); ++d)
    sum += impl_->exec.arena_bytes(static_cast<int>(d));
  return sum;
}
int Session::n_gpu_layers() const {
  return impl_->map.n_gpu_layers;
}
std::vector<std::string> Session::placement_report() const {
  return describe_placement(impl_->map, impl_->devices);
}
const ForwardTimes& Session::forward_times() const {
  return impl_->times;
}
std::vector<std::string> Session::memory_report() const {
  return describe_memory(impl_->devices, *impl_->weights.store, impl_->kv, impl_->exec);
}

std::span<const float> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
  Impl& s = *impl_;
  s.check_tokens(tokens);
  s.logits.clear();
  std::span<const float> last;
  for (size_t at = 0; at < tokens.size(); at += static_cast<size_t>(s.n_batch)) {
    const size_t n = std::min(tokens.size() - at, static_cast<size_t>(s.n_batch));
    const bool is_last = at + n == tokens.size();
    last = s.forward(tokens.subspan(at, n), all_logits, is_last);
  }
  return all_logits ? std::span<const float>(s.logits) : last;
}

void Session::reset() {
  impl_->n_past = 0;
  impl_->ahead.reset();
}

}  // namespace polyinfer
