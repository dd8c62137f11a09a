// CPY between F32, F16, BF16 and Q8_0 (how K and V enter the KV cache), any
// row strides. One block per row; to Q8_0 a warp per 32-block. F32 to F16 or
// BF16 with aligned rows: four values per thread over every row at once (a
// prompt's K and V rows of 128 values, a block each, took 13 us for llama-8b's
// 512 tokens on the H200).
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/cuda_ops.hpp"
#include "backends/cuda/fused_ops.hpp"
#include "backends/cuda/pdl.cuh"

namespace polyinfer::cuda {
namespace {

__device__ __forceinline__ float load_elem(uint32_t type, const uint8_t* row, int64_t i) {
  switch (type) {
    case kF32:
      return reinterpret_cast<const float*>(row)[i];
    case kF16:
      return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    case kBF16:
      return bf16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
    default: {  // Q8_0
      const uint8_t* b = row + (i / 32) * 34;
      const float d = f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(b));
      return d * static_cast<float>(static_cast<int8_t>(b[2 + i % 32]));
    }
  }
}

__device__ __forceinline__ void cpy_row(const View& s, uint32_t st, const View& d, uint32_t dt,
                                        int64_t r) {
  const uint8_t* in = row_flat(s, r);
  uint8_t* out = row_flat(d, r);
  if (dt == kQ8_0) {
    // A warp per 32-block, a lane per value: the block's amax is a warp
    // reduction. The block (2-byte aligned: supports_cpy) is written as 17
    // halfwords, d and then code pairs, each by one lane.
    const int lane = threadIdx.x % 32;
    for (int64_t blk = threadIdx.x / 32; blk < s.ne[0] / 32; blk += blockDim.x / 32) {
      const float v = load_elem(st, in, blk * 32 + lane);
      const float amax = warp_max(fabsf(v));
      const float scale = amax / 127.0f;
      const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
      const uint32_t q = static_cast<uint8_t>(static_cast<int8_t>(rintf(v * inv)));
      const uint32_t next = __shfl_down_sync(0xffffffffu, q, 1);
      uint16_t* h = reinterpret_cast<uint16_t*>(out + blk * 34);
      if (lane % 2 == 0) h[1 + lane / 2] = static_cast<uint16_t>(q | next << 8);
      if (lane == 0) h[0] = __half_as_ushort(__float2half_rn(scale));
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < s.ne[0]; i += blockDim.x) {
    store_float_as(dt, out, i, load_elem(st, in, i));
  }
}

__global__ void cpy_kernel(View s, uint32_t st, View d, uint32_t dt) {
  pdl_start();
  const int64_t rows = s.ne[1] * s.ne[2] * s.ne[3];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) cpy_row(s, st, d, dt, r);
}

// Two copies of the same types (the K and V cache writes): block r < rows of
// the first takes its row r, the others the second's rows.
__global__ void cpy_pair_kernel(View s0, View d0, View s1, View d1, uint32_t st, uint32_t dt) {
  pdl_start();
  const int64_t rows0 = s0.ne[1] * s0.ne[2] * s0.ne[3], rows1 = s1.ne[1] * s1.ne[2] * s1.ne[3];
  for (int64_t r = blockIdx.x; r < rows0 + rows1; r += gridDim.x) {
    if (r < rows0)
      cpy_row(s0, st, d0, dt, r);
    else
      cpy_row(s1, st, d1, dt, r - rows0);
  }
}

// Flat element piece t (four values) of rows of k4 pieces: F32 to 16 bits.
__device__ __forceinline__ void cpy_piece(const View& s, const View& d, int64_t k4, int64_t t,
                                          bool bf16) {
  const int64_t r = t / k4, i = t % k4;
  const float4 v = reinterpret_cast<const float4*>(row_flat(s, r))[i];
  store_half4(reinterpret_cast<uint16_t*>(row_flat(d, r)) + 4 * i, v, bf16);
}

// One or two copies (s1 without rows: one), F32 to F16 (BF16 with bf16).
__global__ void cpy_half4_kernel(View s0, View d0, View s1, View d1, bool bf16) {
  pdl_start();
  const int64_t k0 = s0.ne[0] / 4, k1 = s1.ne[0] / 4;
  const int64_t n0 = k0 * s0.ne[1] * s0.ne[2] * s0.ne[3];
  const int64_t n1 = k1 * s1.ne[1] * s1.ne[2] * s1.ne[3];
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < n0)
    cpy_piece(s0, d0, k0, t, bf16);
  else if (t - n0 < n1)
    cpy_piece(s1, d1, k1, t - n0, bf16);
}

// Whether a CPY takes the four-value kernel.
bool half4_copy(const View& s, uint32_t st, const View& d, uint32_t dt) {
  return st == kF32 && (dt == kF16 || dt == kBF16) && s.ne[0] % 4 == 0 && rows_aligned(s, 16) &&
         rows_aligned(d, 8);
}

void launch_half4(const View& s0, const View& d0, const View& s1, const View& d1, uint32_t dt,
                  cudaStream_t stream) {
  const int64_t pieces =
      (s0.ne[0] * s0.ne[1] * s0.ne[2] * s0.ne[3] + s1.ne[0] * s1.ne[1] * s1.ne[2] * s1.ne[3]) / 4;
  launch_pdl(cpy_half4_kernel, static_cast<unsigned>((pieces + 255) / 256), 256, 0, stream, s0, d0,
             s1, d1, dt == kBF16);
}

bool cpy_type(uint32_t t) {
  return t == kF32 || t == kF16 || t == kBF16 || t == kQ8_0;
}

bool supports_cpy(const pi_node& n) {
  const pi_tensor &s = n.src[0], &d = n.dst;
  if (!cpy_type(s.type) || !cpy_type(d.type) || !same_shape(s, d)) return false;
  for (const pi_tensor* t : {&s, &d}) {
    const TypeSize ts = type_size(t->type);
    if (t->nb[0] != static_cast<uint64_t>(ts.bytes) || t->ne[0] % ts.block != 0) return false;
    const uint64_t a = t->type == kF32 ? 4 : 2;
    if (t->offset % a != 0 || t->nb[1] % a != 0 || t->nb[2] % a != 0 || t->nb[3] % a != 0)
      return false;
  }
  return true;
}

const char* launch_cpy(const LaunchContext& c) {
  if (half4_copy(c.src[0], c.node.src[0].type, c.dst, c.node.dst.type)) {
    launch_half4(c.src[0], c.dst, View{}, View{}, c.node.dst.type, c.stream);
    return nullptr;
  }
  const int64_t rows = nrows(c.node.src[0]);
  launch_pdl(cpy_kernel, static_cast<unsigned>(rows < 65536 ? rows : 65536), 128, 0, c.stream,
             c.src[0], c.node.src[0].type, c.dst, c.node.dst.type);
  return nullptr;
}

}  // namespace

const OpImpl kOpCpy{supports_cpy, no_scratch, launch_cpy};

const char* launch_cpy_pair(const UnitContext& c) {
  const NodeViews &a = c.views[0], &b = c.views[1];
  const uint32_t st = c.nodes[0].src[0].type, dt = c.nodes[0].dst.type;
  if (half4_copy(a.src[0], st, a.dst, dt) && half4_copy(b.src[0], st, b.dst, dt)) {
    launch_half4(a.src[0], a.dst, b.src[0], b.dst, dt, c.stream);
    return nullptr;
  }
  const int64_t rows = nrows(c.nodes[0].src[0]) + nrows(c.nodes[1].src[0]);
  launch_pdl(cpy_pair_kernel, static_cast<unsigned>(rows < 65536 ? rows : 65536), 128, 0, c.stream,
             a.src[0], a.dst, b.src[0], b.dst, c.nodes[0].src[0].type, c.nodes[0].dst.type);
  return nullptr;
}

}  // namespace polyinfer::cuda
