// The ROPE+KV unit (fusion.hpp's kRopeKv): one token's ROPE(Q), ROPE(K) and
// the CPYs of the roped K and of V into the KV cache, in one block. Three
// launches of a few KB each become one, and the rotation table (cos, sin per
// frequency index) is computed once for Q and K instead of once per pair.
// Every input is read into registers before a block barrier and every output
// written after it: the memory plan may put one node's output over another's
// input (llama's ROPE K output lands on Q, which dies at ROPE Q), which a grid
// of blocks could not order. A decode token is a few thousand values, so one
// block of 1,024 threads is a few loads and stores per thread. Where no
// output lies over an input (Unit::spread, as the memory plan lays out a
// model's graph), a grid takes the pairs instead, a thread per pair computing
// its own rotation: no barrier, and a llama-8b token's 3,072 pairs are spread
// over 24 multiprocessors instead of waiting on one.
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/rope.cuh"

namespace polyinfer::cuda {
namespace {

constexpr int kThreads = 1024;
// Pairs of values per thread: Q, and K and V each.
constexpr int kQPairs = static_cast<int>(kMaxRopeKvQ / 2 / kThreads);
constexpr int kKvPairs = static_cast<int>(kMaxRopeKvKv / 2 / kThreads);
static_assert(kQPairs * 2 * kThreads == kMaxRopeKvQ && kKvPairs * 2 * kThreads == kMaxRopeKvKv);

struct RopeKvArgs {
  View q, k, v;           // ROPE Q's, ROPE K's and CPY V's sources: [D, heads] F32
  View q_out, k_out;      // the ROPEs' outputs
  View k_cache, v_cache;  // the CPYs' destinations
  // Per token (decode_fields.hpp): the destinations' byte offsets in device
  // memory, added to k_cache.data and v_cache.data (then their buffers'
  // starts); nullptr: the views are where they write.
  const int64_t *k_row, *v_row;
  uint32_t k_type, v_type;  // and their types (F32, F16, BF16)
  const int32_t* pos;       // the token's position
  const float* ff;          // frequency factors, or nullptr
  RopeArgs rope;
};

// Pair s of a [D, heads] tensor (D even): its row and elements. Frequency
// index i = s % (D/2) rotates (rope_pair) when i < n_rot/2; past n_rot the
// values pass through in pairs (2i, 2i + 1).
struct PairAt {
  int64_t head;
  int i;
  int2 e;
};

__device__ __forceinline__ PairAt pair_at(const RopeArgs& p, int s, int half_d) {
  const int i = s % half_d;
  return {s / half_d, i, 2 * i < p.n_rot ? rope_pair(p, i) : make_int2(2 * i, 2 * i + 1)};
}

// Pair s of V's [D, heads] (not rotated): values (2i, 2i + 1).
__device__ __forceinline__ PairAt plain_pair(int s, int half_d) {
  const int i = s % half_d;
  return {s / half_d, i, make_int2(2 * i, 2 * i + 1)};
}

__device__ __forceinline__ float2 load_pair(const View& x, const PairAt& at) {
  const float* row = reinterpret_cast<const float*>(row_at(x, at.head, 0, 0));
  return make_float2(row[at.e.x], row[at.e.y]);
}

__device__ __forceinline__ void store_pair(const View& y, uint32_t type, const PairAt& at,
                                           float2 v) {
  uint8_t* row = row_at(y, at.head, 0, 0);
  store_float_as(type, row, at.e.x, v.x);
  store_float_as(type, row, at.e.y, v.y);
}

// As rope.cuh's ROPE op: (x0, x1) rotated by c = (cos, sin).
__device__ __forceinline__ float2 rotate_by(float2 c, float2 x) {
  return make_float2(x.x * c.x - x.y * c.y, x.x * c.y + x.y * c.x);
}

// Pair `at` rotated by the table's cos, sin (past n_rot: unchanged).
__device__ __forceinline__ float2 rotate(const RopeArgs& p, const float2* cs, const PairAt& at,
                                         float2 x) {
  return 2 * at.i < p.n_rot ? rotate_by(cs[at.i], x) : x;
}

__global__ __launch_bounds__(kThreads) void rope_kv_kernel(RopeKvArgs a) {
  pdl_start();
  __shared__ float2 cs[kMaxRopeKvHead / 2];
  const int tid = threadIdx.x;
  // Half a head of Q and K (the same D), and of V; the pairs of each.
  const int half = static_cast<int>(a.q.ne[0] / 2), half_v = static_cast<int>(a.v.ne[0] / 2);
  const int nq = half * static_cast<int>(a.q.ne[1]), nk = half * static_cast<int>(a.k.ne[1]);
  const int nv = half_v * static_cast<int>(a.v.ne[1]);
  View k_cache = a.k_cache, v_cache = a.v_cache;
  if (a.k_row) k_cache.data += *a.k_row;
  if (a.v_row) v_cache.data += *a.v_row;
  for (int i = tid; i < a.rope.n_rot / 2; i += kThreads)
    cs[i] = rope_cos_sin(a.rope, *a.pos, a.ff, i);
  float2 q[kQPairs] = {}, k[kKvPairs] = {}, v[kKvPairs] = {};
#pragma unroll
  for (int j = 0; j < kQPairs; ++j) {
    const int s = tid + j * kThreads;
    if (s < nq) q[j] = load_pair(a.q, pair_at(a.rope, s, half));
  }
#pragma unroll
  for (int j = 0; j < kKvPairs; ++j) {
    const int s = tid + j * kThreads;
    if (s < nk) k[j] = load_pair(a.k, pair_at(a.rope, s, half));
    if (s < nv) v[j] = load_pair(a.v, plain_pair(s, half_v));
  }
  // Every read above is done before any thread writes below.
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kQPairs; ++j) {
    const int s = tid + j * kThreads;
    if (s < nq) {
      const PairAt at = pair_at(a.rope, s, half);
      store_pair(a.q_out, kF32, at, rotate(a.rope, cs, at, q[j]));
    }
  }
#pragma unroll
  for (int j = 0; j < kKvPairs; ++j) {
    const int s = tid + j * kThreads;
    if (s < nk) {
      const PairAt at = pair_at(a.rope, s, half);
      const float2 r = rotate(a.rope, cs, at, k[j]);
      store_pair(a.k_out, kF32, at, r);
      store_pair(k_cache, a.k_type, at, r);
    }
    if (s < nv) store_pair(v_cache, a.v_type, plain_pair(s, half_v), v[j]);
  }
}

constexpr int kGridThreads = 128;

// The grid form: thread t of the flat [Q pairs | K pairs | V pairs] loads,
// rotates and stores its pair.
__global__ __launch_bounds__(kGridThreads) void rope_kv_grid_kernel(RopeKvArgs a) {
  pdl_start();
  const int half = static_cast<int>(a.q.ne[0] / 2), half_v = static_cast<int>(a.v.ne[0] / 2);
  const int nq = half * static_cast<int>(a.q.ne[1]), nk = half * static_cast<int>(a.k.ne[1]);
  const int nv = half_v * static_cast<int>(a.v.ne[1]);
  int s = blockIdx.x * kGridThreads + threadIdx.x;
  if (s < nq + nk) {
    const bool is_q = s < nq;
    if (!is_q) s -= nq;
    const PairAt at = pair_at(a.rope, s, half);
    const float2 x = load_pair(is_q ? a.q : a.k, at);
    const float2 r =
        2 * at.i < a.rope.n_rot ? rotate_by(rope_cos_sin(a.rope, *a.pos, a.ff, at.i), x) : x;
    if (is_q) {
      store_pair(a.q_out, kF32, at, r);
      return;
    }
    View k_cache = a.k_cache;
    if (a.k_row) k_cache.data += *a.k_row;
    store_pair(a.k_out, kF32, at, r);
    store_pair(k_cache, a.k_type, at, r);
    return;
  }
  s -= nq + nk;
  if (s >= nv) return;
  View v_cache = a.v_cache;
  if (a.v_row) v_cache.data += *a.v_row;
  const PairAt at = plain_pair(s, half_v);
  store_pair(v_cache, a.v_type, at, load_pair(a.v, at));
}

}  // namespace

const char* launch_rope_kv(const UnitContext& c) {
  const NodeViews &rq = c.views[0], &rk = c.views[1], &ck = c.views[2], &cv = c.views[3];
  RopeKvArgs a{};
  a.q = rq.src[0];
  a.k = rk.src[0];
  a.v = cv.src[0];
  a.q_out = rq.dst;
  a.k_out = rk.dst;
  a.k_cache = ck.dst;
  a.v_cache = cv.dst;
  a.k_row = c.field[2];
  a.v_row = c.field[3];
  if (a.k_row) a.k_cache.data -= c.nodes[2].dst.offset;
  if (a.v_row) a.v_cache.data -= c.nodes[3].dst.offset;
  a.k_type = c.nodes[2].dst.type;
  a.v_type = c.nodes[3].dst.type;
  a.pos = reinterpret_cast<const int32_t*>(rq.src[1].data);
  a.ff = reinterpret_cast<const float*>(rq.src[2].data);
  a.rope = rope_args(c.nodes[0]);
  if (c.spread) {
    const int64_t pairs =
        (a.q.ne[0] * a.q.ne[1] + a.k.ne[0] * a.k.ne[1] + a.v.ne[0] * a.v.ne[1]) / 2;
    const auto blocks = static_cast<unsigned>((pairs + kGridThreads - 1) / kGridThreads);
    launch_pdl(rope_kv_grid_kernel, blocks, kGridThreads, 0, c.stream, a);
  } else {
    launch_pdl(rope_kv_kernel, 1, kThreads, 0, c.stream, a);
  }
  return nullptr;
}

}  // namespace polyinfer::cuda
