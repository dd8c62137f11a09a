// Element-wise ops: ADD and MUL (with broadcast of src1), SCALE, SILU, GELU,
// SWIGLU. One kernel walks rows (grid y) and the elements of a row (grid x),
// so any row strides work and row i0 reads stay coalesced.
#include "backends/cuda/activations.cuh"
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

enum class Ew : int { kAdd, kMul, kScale, kSilu, kGelu, kSwiglu };

// One value of the op: v from src0, z from src1 (the value at the same index,
// or src1's broadcast value), s the SCALE factor.
__device__ __forceinline__ float apply(Ew op, float v, float z, float s) {
  switch (op) {
    case Ew::kAdd:
      return v + z;
    case Ew::kMul:
      return v * z;
    case Ew::kScale:
      return v * s;
    case Ew::kSilu:
      return silu(v);
    case Ew::kGelu:
      return gelu(v);
    default:
      return silu(v) * z;
  }
}

__host__ __device__ bool reads_src1(Ew op) {
  return op == Ew::kAdd || op == Ew::kMul || op == Ew::kSwiglu;
}

// Grid x covers a row's elements (a decode step's row of 14,336 values gets
// 56 blocks, not one), grid y the rows; both stride over what they do not
// cover.
__global__ void ew_kernel(Ew op, View a, View b, View d, float s) {
  pdl_start();
  const int64_t rows = a.ne[1] * a.ne[2] * a.ne[3];
  const int64_t ne0 = a.ne[0], bne0 = b.ne[0];
  const bool binary = reads_src1(op);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
    const float* x = reinterpret_cast<const float*>(row_at(a, i1, i2, i3));
    float* y = reinterpret_cast<float*>(row_at(d, i1, i2, i3));
    const float* z =
        binary ? reinterpret_cast<const float*>(row_at(b, i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]))
               : nullptr;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < ne0;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      y[i] = apply(op, x[i], binary ? z[bne0 == ne0 ? i : i % bne0] : 0.0f, s);
    }
  }
}

// Prompt-sized ops whose rows are 16-byte aligned and whose src1 (if read) has
// src0's shape: four values per thread, a thread per four values (the
// looping kernel's threads wait on each iteration's loads in turn: a 512 x
// 14,336 SWIGLU took 62 us, 1.4 TB/s).
__global__ void ew_vec4_kernel(Ew op, View a, View b, View d, float s) {
  pdl_start();
  const int64_t i = 4 * (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x);
  if (i >= a.ne[0]) return;
  const int64_t rows = a.ne[1] * a.ne[2] * a.ne[3];
  const bool binary = reads_src1(op);
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t i1 = r % a.ne[1], i2 = (r / a.ne[1]) % a.ne[2], i3 = r / (a.ne[1] * a.ne[2]);
    const float4 x = *reinterpret_cast<const float4*>(row_at(a, i1, i2, i3) + 4 * i);
    const float4 z = binary ? *reinterpret_cast<const float4*>(row_at(b, i1, i2, i3) + 4 * i) : x;
    const float4 y{apply(op, x.x, z.x, s), apply(op, x.y, z.y, s), apply(op, x.z, z.z, s),
                   apply(op, x.w, z.w, s)};
    *reinterpret_cast<float4*>(row_at(d, i1, i2, i3) + 4 * i) = y;
  }
}

bool vec4_fits(const LaunchContext& c, Ew op) {
  const View &a = c.src[0], &b = c.src[1];
  if (a.ne[0] % 4 != 0 || !rows_aligned16(a) || !rows_aligned16(c.dst)) return false;
  if (!reads_src1(op)) return true;
  for (int d = 0; d < 4; ++d) {
    if (b.ne[d] != a.ne[d]) return false;
  }
  return rows_aligned16(b);
}

// Few rows (decode) spread each row over blocks; many rows (prefill) take
// the four-wide kernel, or else a block per row whose threads loop over it:
// the row's index arithmetic (64-bit divisions) is then paid once per 56
// elements, not once per element, which halved the time of a 512 x 14,336
// SWIGLU on the H200.
constexpr int64_t kFewRows = 64;

const char* launch(const LaunchContext& c, Ew op) {
  constexpr int kThreads = 256;
  const int64_t rows = c.dst.ne[1] * c.dst.ne[2] * c.dst.ne[3];
  const unsigned grid_y = static_cast<unsigned>(rows < 65535 ? rows : 65535);
  if (rows >= kFewRows && vec4_fits(c, op)) {
    const unsigned gx = static_cast<unsigned>((c.dst.ne[0] / 4 + kThreads - 1) / kThreads);
    launch_pdl(ew_vec4_kernel, dim3(gx, grid_y), kThreads, 0, c.stream, op, c.src[0], c.src[1],
               c.dst, c.node.f[0]);
    return nullptr;
  }
  const int64_t per_row = rows < kFewRows ? (c.dst.ne[0] + kThreads - 1) / kThreads : 1;
  const dim3 grid(static_cast<unsigned>(per_row < 65536 ? per_row : 65536), grid_y);
  launch_pdl(ew_kernel, grid, kThreads, 0, c.stream, op, c.src[0], c.src[1], c.dst, c.node.f[0]);
  return nullptr;
}

bool supports_binary(const pi_node& n) {
  const pi_tensor &a = n.src[0], &b = n.src[1];
  if (!is_f32_rows(a) || !is_f32_rows(b) || !is_f32_rows(n.dst) || !same_shape(a, n.dst))
    return false;
  for (int d = 0; d < 4; ++d) {
    if (b.ne[d] <= 0 || a.ne[d] % b.ne[d] != 0) return false;
  }
  return true;
}

bool supports_unary(const pi_node& n) {
  return is_f32_rows(n.src[0]) && is_f32_rows(n.dst) && same_shape(n.src[0], n.dst);
}

bool supports_swiglu(const pi_node& n) {
  return supports_unary(n) && is_f32_rows(n.src[1]) && same_shape(n.src[0], n.src[1]);
}

}  // namespace

const OpImpl kOpAdd{supports_binary, no_scratch,
                    [](const LaunchContext& c) { return launch(c, Ew::kAdd); }};
const OpImpl kOpMul{supports_binary, no_scratch,
                    [](const LaunchContext& c) { return launch(c, Ew::kMul); }};
const OpImpl kOpScale{supports_unary, no_scratch,
                      [](const LaunchContext& c) { return launch(c, Ew::kScale); }};
const OpImpl kOpSilu{supports_unary, no_scratch,
                     [](const LaunchContext& c) { return launch(c, Ew::kSilu); }};
const OpImpl kOpGelu{supports_unary, no_scratch,
                     [](const LaunchContext& c) { return launch(c, Ew::kGelu); }};
const OpImpl kOpSwiglu{supports_swiglu, no_scratch,
                       [](const LaunchContext& c) { return launch(c, Ew::kSwiglu); }};

}  // namespace polyinfer::cuda
