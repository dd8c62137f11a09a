#include "backends/cuda/graph_submit.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "backends/cuda/act_quant_cache.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/cuda_status.hpp"
#include "backends/cuda/decode_fields.hpp"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/fusion.hpp"
#include "backends/cuda/matvec_path.hpp"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/view.hpp"

namespace polyinfer::cuda {
namespace {

const OpImpl* const kOps[PI_OP_COUNT] = {
    &kOpGetRows, &kOpRmsNorm,   &kOpNorm, &kOpMulMat, &kOpAdd,    &kOpMul, &kOpScale,  &kOpRope,
    &kOpSoftMax, &kOpFlashAttn, &kOpSilu, &kOpGelu,   &kOpSwiglu, &kOpCpy, &kOpArgmax,
};

View view_of(const pi_tensor& t) {
  View v{};
  v.data = t.buffer ? t.buffer->ptr + t.offset : nullptr;
  for (int d = 0; d < 4; ++d) {
    v.ne[d] = t.ne[d];
    v.nb[d] = static_cast<int64_t>(t.nb[d]);
  }
  return v;
}

// Whether a node's destination may share bytes with the cached activations
// (bounds from the strides, generous for block types), or, for a folded
// norm's (ActForm::kNormFold), with the norm's input and weight it reads.
bool overlaps(const View& dst, const ActQuantCache& a) {
  uint64_t span = dst.nb[0] > 4 ? static_cast<uint64_t>(dst.nb[0]) : 4;
  for (int d = 0; d < 4; ++d) span += static_cast<uint64_t>((dst.ne[d] - 1) * dst.nb[d]);
  const uint8_t* a_end = a.data + (a.ncols - 1) * a.nb1 + 4 * a.k;
  if (a.form == ActForm::kNormFold &&
      (views_overlap(dst, a.fold.x) || views_overlap(dst, a.fold.nw)))
    return true;
  return dst.data < a_end && a.data < dst.data + span;
}

// The last node a capturing stream has recorded (nullptr before the first).
cudaGraphNode_t capture_tail(cudaStream_t stream) {
  cudaStreamCaptureStatus status{};
  const cudaGraphNode_t* deps = nullptr;
  // Edge data asked for: a programmatic edge (pdl.cuh) is lost to a query without it.
  const cudaGraphEdgeData* edges = nullptr;
  size_t n = 0;
  if (cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &deps, &edges, &n) !=
          cudaSuccess ||
      n != 1) {
    return nullptr;
  }
  return deps[0];
}

// How a submit's nodes are launched: fused units (fusion.hpp) and the
// per-token values its kernels read from device memory.
struct SubmitPlan {
  std::vector<Unit> units;
  std::vector<uint32_t> leaders;  // unit_leaders(units)
  DecodeFields fields;
};

// What enqueue launches (every unit, or those whose first node is in `only`,
// ascending), and, when capturing, where to put each one's last captured
// graph node.
struct EnqueuePlan {
  const SubmitPlan* plan = nullptr;
  const std::vector<uint32_t>* only = nullptr;
  std::vector<cudaGraphNode_t>* tails = nullptr;
};

// Node i's per-token value on the device, or nullptr.
const int64_t* field_of(pi_stream s, const DecodeFields& f, uint32_t i) {
  return f.slot[i] >= 0 ? s->decode_fields + f.slot[i] : nullptr;
}

// Bit j: no node of any submit so far writes n.src[j]'s buffer.
uint32_t constant_srcs(const pi_node& n) {
  uint32_t bits = 0;
  for (int j = 0; j < PI_MAX_SRC; ++j) {
    const pi_buffer b = n.src[j].buffer;
    if (b != nullptr && !b->kernel_written) bits |= 1u << j;
  }
  return bits;
}

std::string launch_node(pi_stream s, const pi_node& n, const int64_t* field,
                        ActQuantCache& act_cache) {
  View src[PI_MAX_SRC];
  for (int j = 0; j < PI_MAX_SRC; ++j) src[j] = view_of(n.src[j]);
  const View dst = view_of(n.dst);
  if (n.op != PI_OP_MUL_MAT) act_cache.valid = false;
  const LaunchContext c{n,
                        src,
                        dst,
                        s->stream,
                        s->scratch.data(),
                        s->scratch.size(),
                        s->cublas,
                        s->dev->sm_count,
                        &act_cache,
                        field,
                        (constant_srcs(n) & 1u) != 0};
  if (const char* e = kOps[n.op]->launch(c)) return std::string(pi_op_name(n.op)) + ": " + e;
  if (act_cache.valid && overlaps(dst, act_cache)) act_cache.valid = false;
  return {};
}

const char* unit_name(const Unit& u, const pi_node& first) {
  switch (u.kind) {
    case UnitKind::kNormMul:
      return "fused RMS_NORM+MUL";
    case UnitKind::kAddNormMul:
      return "fused ADD+RMS_NORM+MUL";
    case UnitKind::kMatvecGroup:
      return "fused MUL_MAT group";
    case UnitKind::kRopePair:
      return "fused ROPE pair";
    case UnitKind::kCpyPair:
      return "fused CPY pair";
    case UnitKind::kRopeKv:
      return "fused ROPE+KV cache write";
    case UnitKind::kMatvecAdd:
      return "fused MUL_MAT+ADD";
    case UnitKind::kNormMatvec:
      return "fused RMS_NORM+MUL+MUL_MAT";
    case UnitKind::kMatvecNormQ:
      return "fused MUL_MAT+ADD+RMS_NORM+MUL";
    case UnitKind::kGemmPair:
      return "batched MUL_MAT pair";
    default:  // a single node that converts its output for the next MUL_MAT
      if (first.op == PI_OP_FLASH_ATTN) return "fused FLASH_ATTN+quantize";
      return u.half_next ? "fused SWIGLU+16-bit" : "fused SWIGLU+quantize";
  }
}

const char* launch_fused(const Unit& u, const UnitContext& c) {
  switch (u.kind) {
    case UnitKind::kNormMul:
    case UnitKind::kAddNormMul:
      return launch_norm_mul(c);
    case UnitKind::kMatvecGroup:
      return launch_mul_mat_group(c);
    case UnitKind::kRopePair:
      return launch_rope_pair(c);
    case UnitKind::kCpyPair:
      return launch_cpy_pair(c);
    case UnitKind::kRopeKv:
      return launch_rope_kv(c);
    case UnitKind::kMatvecAdd:
      return launch_matvec_add(c);
    case UnitKind::kNormMatvec:
      return launch_norm_matvec(c);
    case UnitKind::kMatvecNormQ:
      return launch_matvec_norm_q(c);
    case UnitKind::kGemmPair:
      return launch_gemm_pair(c);
    default:
      return c.nodes[0].op == PI_OP_FLASH_ATTN ? launch_attn_quant(c) : launch_swiglu_next(c);
  }
}

// A fused unit's nodes in one launch.
std::string launch_fused_unit(pi_stream s, const pi_graph& g, const Unit& u, const DecodeFields& f,
                              ActQuantCache& act_cache) {
  static_assert(kMaxUnitNodes >= kMaxGroupMats);
  NodeViews views[kMaxUnitNodes];
  for (uint32_t k = 0; k < u.count; ++k) {
    const pi_node& n = g.nodes[u.first + k];
    for (int j = 0; j < PI_MAX_SRC; ++j) views[k].src[j] = view_of(n.src[j]);
    views[k].dst = view_of(n.dst);
  }
  // Units that start with a product read the activations the cache holds.
  if (u.kind != UnitKind::kMatvecGroup && u.kind != UnitKind::kGemmPair &&
      u.kind != UnitKind::kMatvecNormQ && u.kind != UnitKind::kMatvecAdd)
    act_cache.valid = false;
  UnitContext c{&g.nodes[u.first],   views,     u.count,           u.quantize_next,
                u.quantize_residual, u.spread,  u.half_next,       u.half_bf16,
                s->stream,           s->cublas, s->scratch.data(), &act_cache};
  c.norm_counts = s->norm_counts;
  c.sm_count = s->dev->sm_count;
  for (uint32_t k = 0; k < u.count; ++k) {
    c.field[k] = field_of(s, f, u.first + k);
    c.constant_srcs[k] = constant_srcs(g.nodes[u.first + k]);
  }
  if (const char* e = launch_fused(u, c); e == kLaunchNodes) {
    for (uint32_t k = 0; k < u.count; ++k) {
      const uint32_t i = u.first + k;
      if (std::string err = launch_node(s, g.nodes[i], field_of(s, f, i), act_cache); !err.empty())
        return err;
    }
    return {};
  } else if (e) {
    return std::string(unit_name(u, g.nodes[u.first])) + ": " + e;
  }
  // A unit that converted its own output, or that left its folded norm for
  // the products after it, has just made the cache valid.
  const bool made = u.quantize_next || u.half_next || u.kind == UnitKind::kNormMatvec;
  for (uint32_t k = 0; !made && k < u.count; ++k) {
    if (act_cache.valid && overlaps(views[k].dst, act_cache)) act_cache.valid = false;
  }
  return {};
}

std::string launch_unit(pi_stream s, const pi_graph& g, const Unit& u, const DecodeFields& f,
                        ActQuantCache& act_cache) {
  const pi_node& first = g.nodes[u.first];
  const bool single = u.kind == UnitKind::kSingle && !u.quantize_next && !u.half_next;
  const bool timed = s->dev->profile == ProfileMode::kKernels;
  if (timed) s->profiler.begin_node(s->stream, first, single ? nullptr : unit_name(u, first));
  std::string err = single ? launch_node(s, first, field_of(s, f, u.first), act_cache)
                           : launch_fused_unit(s, g, u, f, act_cache);
  if (!err.empty()) return err;
  if (timed) s->profiler.end_node(s->stream);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    return std::string(pi_op_name(first.op)) + " launch: " + cudaGetErrorString(e);
  }
  return {};
}

// Enqueues the plan's units on the stream; empty or what failed.
std::string enqueue(pi_stream s, const pi_graph& g, const EnqueuePlan& plan) {
  ActQuantCache act_cache;
  size_t next = 0;  // into plan.only
  for (const Unit& u : plan.plan->units) {
    if (plan.only) {
      if (next == plan.only->size()) break;
      if ((*plan.only)[next] != u.first) continue;
      ++next;
    }
    if (std::string e = launch_unit(s, g, u, plan.plan->fields, act_cache); !e.empty()) return e;
    if (plan.tails) plan.tails->push_back(capture_tail(s->stream));
  }
  return {};
}

// A unit whose kernels a patch may set again: none with a matrix product
// (whether it quantizes its activations depends on the unit before it).
bool patchable_unit(const pi_graph& g, const Unit& u) {
  return u.kind != UnitKind::kMatvecGroup && u.kind != UnitKind::kNormMatvec &&
         g.nodes[u.first].op != PI_OP_MUL_MAT;
}

// The kernels of a captured chain, walking back from a unit's tail to the
// previous unit's tail; empty when they are not a plain chain of kernels.
std::vector<cudaGraphNode_t> chain_between(cudaGraphNode_t tail, cudaGraphNode_t stop) {
  std::vector<cudaGraphNode_t> chain;
  bool ok = tail != nullptr && tail != stop;
  for (cudaGraphNode_t node = tail; ok && node != stop;) {
    cudaGraphNodeType type{};
    size_t ndeps = 0;
    ok = cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeKernel &&
         cudaGraphNodeGetDependencies(node, nullptr, nullptr, &ndeps) == cudaSuccess && ndeps <= 1;
    if (!ok) break;
    chain.insert(chain.begin(), node);
    cudaGraphNode_t dep = nullptr;
    cudaGraphEdgeData edge{};
    if (ndeps == 1 && cudaGraphNodeGetDependencies(node, &dep, &edge, &ndeps) != cudaSuccess)
      ok = false;
    node = ndeps == 1 ? dep : nullptr;
    if (node == nullptr && stop != nullptr) ok = false;
  }
  cudaGetLastError();
  return ok ? chain : std::vector<cudaGraphNode_t>{};
}

// Each launched unit's kernels, indexed by node (under the unit's first node)
// for a full capture, by position in `only` for a partial one.
NodeKernels kernels_of(const pi_graph& g, const std::vector<Unit>& units,
                       const std::vector<uint32_t>* only,
                       const std::vector<cudaGraphNode_t>& tails) {
  NodeKernels out(only ? tails.size() : g.n_nodes);
  size_t k = 0;
  for (const Unit& u : units) {
    if (k == tails.size()) break;
    if (only && (*only)[k] != u.first) continue;
    if (patchable_unit(g, u))
      out[only ? k : u.first] = chain_between(tails[k], k == 0 ? nullptr : tails[k - 1]);
    ++k;
  }
  return out;
}

// Captures the plan's nodes into a new graph, with each node's kernels.
pi_status capture(pi_stream s, const pi_graph& g, const SubmitPlan& plan,
                  const std::vector<uint32_t>* only, cudaGraph_t* graph, NodeKernels* kernels) {
  if (cudaError_t e = cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal);
      e != cudaSuccess) {
    return cuda_fail(s->dev, "cudaStreamBeginCapture", e);
  }
  std::vector<cudaGraphNode_t> tails;
  const std::string err = enqueue(s, g, EnqueuePlan{&plan, only, &tails});
  *graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(s->stream, graph);
  if (!err.empty() || end != cudaSuccess) {
    if (*graph) cudaGraphDestroy(*graph);
    cudaGetLastError();
    return fail(
        s->dev, PI_ERR_DEVICE,
        "CUDA backend: capture: " + (err.empty() ? std::string(cudaGetErrorString(end)) : err));
  }
  *kernels = kernels_of(g, plan.units, only, tails);
  return PI_OK;
}

pi_status launch_exec(pi_stream s, cudaGraphExec_t exec) {
  if (cudaError_t e = cudaGraphLaunch(exec, s->stream); e != cudaSuccess)
    return cuda_fail(s->dev, "cudaGraphLaunch", e);
  return PI_OK;
}

pi_status run_eager(pi_stream s, const pi_graph& g, const SubmitPlan& plan) {
  const std::string err = enqueue(s, g, EnqueuePlan{&plan});
  return err.empty() ? PI_OK : fail(s->dev, PI_ERR_DEVICE, "CUDA backend: " + err);
}

// Captures only the changed nodes and patches the cached executable.
bool try_patch(pi_stream s, const pi_graph& g, const SubmitPlan& plan, const GraphKeys& keys,
               const GraphCache::Lookup& lk) {
  cudaGraph_t part = nullptr;
  NodeKernels fresh;
  if (capture(s, g, plan, &lk.changed, &part, &fresh) != PI_OK) return false;
  const bool ok = s->graphs.patch(keys, lk.changed, fresh);
  cudaGraphDestroy(part);
  return ok;
}

pi_status capture_and_launch(pi_stream s, const pi_graph& g, const SubmitPlan& plan,
                             const GraphKeys& keys) {
  cudaGraph_t graph = nullptr;
  NodeKernels kernels;
  if (pi_status st = capture(s, g, plan, nullptr, &graph, &kernels); st != PI_OK) return st;
  cudaError_t e = cudaSuccess;
  cudaGraphExec_t exec = s->graphs.install(keys, plan.leaders, graph, std::move(kernels), &e);
  if (exec == nullptr) return cuda_fail(s->dev, "cudaGraphInstantiate", e);
  return launch_exec(s, exec);
}

// Checks that the device runs every node of g; *need is the most scratch
// one of them takes.
pi_status check_nodes(pi_stream s, const pi_graph& g, size_t* need) {
  size_t scratch = 0;
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const pi_node& n = g.nodes[i];
    if (!supports(s->dev, &n)) {
      return fail(s->dev, PI_ERR_UNSUPPORTED,
                  "CUDA backend: node " + std::to_string(i) + " (" + pi_op_name(n.op) +
                      ") has types or shapes it does not support");
    }
    const size_t need_i = kOps[n.op]->scratch(n);
    scratch = need_i > scratch ? need_i : scratch;
  }
  *need = scratch;
  return PI_OK;
}

pi_status reserve_scratch(pi_stream s, size_t need) {
  bool moved = false;
  if (cudaError_t e = s->scratch.reserve(need, s->stream, &moved); e != cudaSuccess) {
    return cuda_fail(s->dev, "cudaMalloc (scratch)", e);
  }
  if (moved) s->graphs.clear();
  return PI_OK;
}

uint64_t device_address(pi_buffer b) {
  return reinterpret_cast<uintptr_t>(b->ptr);
}

// Before the graph's kernels on the stream: the per-token values they read.
// From pageable memory, so the host vector may go at once (the copy is
// staged before cudaMemcpyAsync returns).
pi_status upload_fields(pi_stream s, const DecodeFields& f) {
  if (f.values.empty()) return PI_OK;
  if (cudaError_t e =
          cudaMemcpyAsync(s->decode_fields, f.values.data(), f.values.size() * sizeof(int64_t),
                          cudaMemcpyHostToDevice, s->stream);
      e != cudaSuccess) {
    return cuda_fail(s->dev, "cudaMemcpyAsync (decode fields)", e);
  }
  return PI_OK;
}

// A prompt's graph (some MUL_MAT on the GEMM path) runs eagerly: its kernels
// are long enough that launching them one by one keeps the GPU busy, and its
// capture and instantiation (milliseconds for a model's graph) would pay
// back only if the same prompt shape came again.
bool gemm_graph(const pi_graph& g) {
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    if (g.nodes[i].op == PI_OP_MUL_MAT && !takes_matvec(g.nodes[i])) return true;
  }
  return false;
}

// In host profiling, the host time of each step of a submit (Profiler::add_step).
class StepClock {
 public:
  explicit StepClock(pi_stream s) : s_(s), on_(s->dev->profile == ProfileMode::kHost) {}
  void step(const char* name) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    s_->profiler.add_step(name, std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  pi_stream s_;
  bool on_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Every buffer a node of g writes, marked before any of g's kernels is
// enqueued: a later node of g, or of a later submit whose kernels may start
// while g's still run, must then not read it early (pi_buffer_s).
void mark_written(const pi_graph& g) {
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    if (pi_buffer b = g.nodes[i].dst.buffer) b->kernel_written = true;
  }
}

// The host work of a submit before it enqueues anything: fused units,
// per-token fields (for a stream idle or not at the launch) and, for a
// decode graph with graphs on, its signature and what the cache holds for it.
struct PlannedSubmit {
  SubmitPlan plan;
  bool keyed = false;  // keys and lk are set
  GraphKeys keys;
  GraphCache::Lookup lk;
};

PlannedSubmit plan_submit(pi_stream s, const pi_graph& g, bool idle, StepClock& clock) {
  PlannedSubmit p;
  p.plan.units = plan_units(g, s->dev->fusion);
  p.plan.fields = plan_decode_fields(g, p.plan.units, kDecodeFieldCapacity, idle);
  clock.step("fused units, per-token fields");
  if (!s->dev->graphs || gemm_graph(g)) return p;
  p.plan.leaders = unit_leaders(p.plan.units, g.n_nodes);
  p.keys = graph_keys(g, p.plan.units, p.plan.fields, device_address);
  clock.step("signature");
  p.lk = s->graphs.lookup(p.keys, p.plan.leaders);
  p.keyed = true;
  clock.step("graph cache lookup");
  return p;
}

// Enqueues a planned submit: the per-token fields' upload, then the cached
// executable, a patched or new capture, or the nodes one by one.
pi_status launch_planned(pi_stream s, const pi_graph& g, const PlannedSubmit& p, StepClock& clock,
                         const char** action) {
  if (pi_status st = upload_fields(s, p.plan.fields); st != PI_OK) return st;
  clock.step("per-token fields upload");
  if (!p.keyed) {
    if (s->dev->graphs) *action = "eager (prompt)";
    return run_eager(s, g, p.plan);
  }
  switch (p.lk.action) {
    case GraphCache::Action::kReplay: {
      *action = "replay";
      const pi_status st = launch_exec(s, p.lk.exec);
      clock.step("replay: cudaGraphLaunch");
      return st;
    }
    case GraphCache::Action::kPatch:
      if (try_patch(s, g, p.plan, p.keys, p.lk)) {
        *action = "patch + replay";
        return launch_exec(s, p.lk.exec);
      }
      *action = "capture (patch failed)";
      return capture_and_launch(s, g, p.plan, p.keys);
    case GraphCache::Action::kCapture:
      *action = "capture";
      return capture_and_launch(s, g, p.plan, p.keys);
    case GraphCache::Action::kEager:
      break;
  }
  *action = "eager";
  return run_eager(s, g, p.plan);
}

pi_status submit(pi_stream s, const pi_graph& g, const char** action) {
  StepClock clock(s);
  cudaSetDevice(s->dev->index);
  set_pdl_launches(s->dev->pdl);
  s->prepared.reset();  // planned against a cache this submit may change
  mark_written(g);
  size_t need = 0;
  if (pi_status st = check_nodes(s, g, &need); st != PI_OK) return st;
  if (pi_status st = reserve_scratch(s, need); st != PI_OK) return st;
  clock.step("node checks, scratch");
  const PlannedSubmit p = plan_submit(s, g, s->idle, clock);
  s->idle = false;
  return launch_planned(s, g, p, clock, action);
}

}  // namespace

// graph_prepare's work, kept on the stream for graph_submit_prepared.
struct PreparedSubmit {
  pi_graph g;            // the caller keeps the nodes
  bool planned = false;  // p is set: the stream's scratch was large enough
  PlannedSubmit p;
};

void free_prepared(PreparedSubmit* p) {
  delete p;
}

namespace {

// Plans a graph for a launch on an idle stream (the host reads the previous
// step's output before it submits the next); anything that would touch the
// stream (a larger scratch) is left to the launch.
pi_status prepare(pi_stream s, const pi_graph& g) {
  StepClock clock(s);
  s->prepared.reset();
  auto prep = std::unique_ptr<PreparedSubmit, PreparedDeleter>(new PreparedSubmit{g, false, {}});
  size_t need = 0;
  if (pi_status st = check_nodes(s, g, &need); st != PI_OK) return st;
  clock.step("prepare: node checks");
  if (need <= s->scratch.size()) {
    mark_written(g);
    prep->p = plan_submit(s, g, /*idle=*/true, clock);
    prep->planned = true;
  }
  s->prepared = std::move(prep);
  return PI_OK;
}

// The prepared graph as planned where it was planned and the stream is idle,
// as a plain submit otherwise. (The scratch only grows, and only in a
// graph_submit, which drops the prepared graph: what fit at prepare fits.)
pi_status submit_prepared(pi_stream s, const char** action) {
  if (!s->prepared) {
    return fail(s->dev, PI_ERR_INVALID, "CUDA backend: no graph prepared on this stream");
  }
  const std::unique_ptr<PreparedSubmit, PreparedDeleter> prep = std::move(s->prepared);
  if (!prep->planned || !s->idle) return submit(s, prep->g, action);
  StepClock clock(s);
  cudaSetDevice(s->dev->index);
  set_pdl_launches(s->dev->pdl);
  s->idle = false;
  return launch_planned(s, prep->g, prep->p, clock, action);
}

}  // namespace

int supports(pi_device, const pi_node* node) {
  return node->op < PI_OP_COUNT && kOps[node->op]->supports(*node) ? 1 : 0;
}

// In host profiling, each submit's host time is summed under what it did.
template <class F>
pi_status timed(pi_stream s, const char* prefix, F&& f) {
  const char* action = "eager (graphs off)";
  if (s->dev->profile != ProfileMode::kHost) return f(&action);
  const auto t0 = std::chrono::steady_clock::now();
  const pi_status st = f(&action);
  const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
  s->profiler.add_submit((std::string(prefix) + action).c_str(), ms.count());
  return st;
}

pi_status graph_submit(pi_stream s, const pi_graph* graph) {
  return timed(s, "", [&](const char** action) { return submit(s, *graph, action); });
}

pi_status graph_prepare(pi_stream s, const pi_graph* graph) {
  return timed(s, "", [&](const char** action) {
    *action = "prepare";
    return prepare(s, *graph);
  });
}

pi_status graph_submit_prepared(pi_stream s) {
  return timed(s, "prepared: ", [&](const char** action) { return submit_prepared(s, action); });
}

}  // namespace polyinfer::cuda
