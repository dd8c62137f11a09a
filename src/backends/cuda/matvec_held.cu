// Decode products over Q4_K and Q6_K rows of kHeldK (4,096) values, one
// activation column: llama-8b's gate and up (28,672 rows) and its output
// matrix (128,256 rows).
//
// Lane l of every warp takes half super-block l of each row (values 128 l ..
// 128 l + 127), so a lane meets the same 128 activations in every row: their
// 8-bit codes and scales are loaded into its registers once per kernel. The
// fast path (matvec.cu) has lanes take 32-value units across the row and
// loads each unit's activations again per row, as many bytes from L1 as the
// row's weights; with them held, a 28,672 x 4,096 Q4_K product took 18.4 us
// against 23.5 on the H200, and 128,256 x 4,096 71.8 against 91.7 (a plain
// read of the same bytes: 17.0 and 69.3 us; BENCHMARKS.md, session 45).
//
// Rows are staged in shared memory as in the fast path (16-byte cp.async,
// lane i copying the row's 16-byte pieces i, i + 32, ...: whole sectors per
// warp), kStages rows per warp in flight, over a grid of one wave whose warps
// step through the rows.
#include <cuda_pipeline.h>

#include <algorithm>
#include <mutex>

#include "backends/cuda/matvec_held.hpp"
#include "backends/cuda/norm_q.cuh"
#include "backends/cuda/packed_loads.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quant_decode.cuh"

namespace polyinfer::cuda {
namespace {

constexpr int kWarps = 8;
// Rows of a warp in flight: with 3, gate + up alone took 18.4 us, against
// 18.6-18.9 with 2 or 4 (session 45).
constexpr int kStages = 3;

template <uint32_t T>
struct HeldRow;
template <>
struct HeldRow<kQ4_K> {
  static constexpr int kBytes = kHeldK / 256 * 144;
};
template <>
struct HeldRow<kQ6_K> {
  static constexpr int kBytes = kHeldK / 256 * 210;
};

// A lane's activations: the codes of blocks 4 l .. 4 l + 3 (32 words), each
// block's scale d and d · Σ codes, and Σ codes per 16 (Q6_K's −32 offset).
struct LaneActs {
  int x[32];
  float d[4], s[4];
  int sum16[8];
};

__device__ __forceinline__ void load_lane_acts(const FastArgs& p, int lane, LaneActs& a) {
  const int4* xv = reinterpret_cast<const int4*>(p.aq) + 8 * lane;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int4 v = __ldg(xv + i);
    a.x[4 * i] = v.x, a.x[4 * i + 1] = v.y, a.x[4 * i + 2] = v.z, a.x[4 * i + 3] = v.w;
  }
  const float4 d = __ldg(reinterpret_cast<const float4*>(p.ad) + lane);
  const float4 s = __ldg(reinterpret_cast<const float4*>(p.as) + lane);
  a.d[0] = d.x, a.d[1] = d.y, a.d[2] = d.z, a.d[3] = d.w;
  a.s[0] = s.x, a.s[1] = s.y, a.s[2] = s.z, a.s[3] = s.w;
#pragma unroll
  for (int h = 0; h < 8; ++h) {
    int sum = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) sum = dp4a(0x01010101u, a.x[4 * h + i], sum);
    a.sum16[h] = sum;
  }
}

// Σ over half super-block `lane` of a staged Q4_K row: sub-blocks j = 4 h ..
// 4 h + 3 (h = lane % 2) of super-block lane / 2, each d · sc_j · Σ q·x −
// dmin · m_j · Σ x (docs/QUANT_FORMATS.md), in units of the activation scales.
__device__ __forceinline__ float q4k_half(const uint8_t* row, int lane, const LaneActs& a) {
  const uint8_t* b = row + (lane >> 1) * 144;
  const bool hi = lane & 1;
  const uint4 hdr = *reinterpret_cast<const uint4*>(b);
  uint32_t q[16];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint4 v = *reinterpret_cast<const uint4*>(b + 16 + 64 * hi + 16 * i);
    q[4 * i] = v.x, q[4 * i + 1] = v.y, q[4 * i + 2] = v.z, q[4 * i + 3] = v.w;
  }
  // The 6-bit scales and mins of the four sub-blocks, one per byte
  // (quant_decode.cuh's scale_min_k4 for j = 4 h .. 4 h + 3 at once).
  const uint32_t y = hdr.y, z = hdr.z, w = hdr.w;
  const uint32_t sc = hi ? (w & 0x0f0f0f0fu) | ((y >> 2) & 0x30303030u) : y & 0x3f3f3f3fu;
  const uint32_t mn = hi ? ((w >> 4) & 0x0f0f0f0fu) | ((z >> 2) & 0x30303030u) : z & 0x3f3f3f3fu;
  float sd = 0.0f, sm = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    // Sub-block j's codes: the low (j even) or high nibbles of 32 bytes.
    const int g = j / 2, shift = 4 * (j % 2);
    int dot = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i)
      dot = dp4a((q[8 * g + i] >> shift) & 0x0f0f0f0fu, a.x[8 * j + i], dot);
    sd += static_cast<float>((sc >> (8 * j)) & 0xffu) * a.d[j] * static_cast<float>(dot);
    sm += static_cast<float>((mn >> (8 * j)) & 0xffu) * a.s[j];
  }
  return f16_bits_to_f32(static_cast<uint16_t>(hdr.x)) * sd -
         f16_bits_to_f32(static_cast<uint16_t>(hdr.x >> 16)) * sm;
}

// The same for Q6_K: 4 low bits from ql, 2 high bits from qh, minus 32, and
// a signed 8-bit scale per 16 values (docs/QUANT_FORMATS.md). The blocks are
// 210 bytes, so their fields sit at 2-byte aligned addresses (lds128).
__device__ __forceinline__ float q6k_half(const uint8_t* row, int lane, const LaneActs& a) {
  const uint8_t* b = row + (lane >> 1) * 210;
  const int h = lane & 1;
  uint32_t ql[16], qh[8];
#pragma unroll
  for (int i = 0; i < 4; ++i) lds128(b + 64 * h + 16 * i, ql + 4 * i);
#pragma unroll
  for (int i = 0; i < 2; ++i) lds128(b + 128 + 32 * h + 16 * i, qh + 4 * i);
  const uint32_t scw[2] = {lds32(b + 192 + 8 * h), lds32(b + 196 + 8 * h)};
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int lbase = 8 * (j % 2), lshift = 4 * (j / 2), hshift = 2 * j;
    int dot[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t v =
          ((ql[lbase + i] >> lshift) & 0x0f0f0f0fu) | (((qh[i] >> hshift) & 0x03030303u) << 4);
      dot[i / 4] = dp4a(v, a.x[8 * j + i], dot[i / 4]);
    }
    const uint32_t sw = scw[j / 2] >> (16 * (j % 2));
    const float s0 = static_cast<float>(static_cast<int8_t>(sw & 0xffu));
    const float s1 = static_cast<float>(static_cast<int8_t>((sw >> 8) & 0xffu));
    acc += a.d[j] * (s0 * static_cast<float>(dot[0] - 32 * a.sum16[2 * j]) +
                     s1 * static_cast<float>(dot[1] - 32 * a.sum16[2 * j + 1]));
  }
  return f16_bits_to_f32(ld16(b + 208)) * acc;
}

template <uint32_t T>
__global__ __launch_bounds__(kWarps * 32, 2) void matvec_held(FastArgs p) {
  constexpr int kRow = HeldRow<T>::kBytes, kPieces = kRow / 16;
  static_assert(kRow % 16 == 0, "rows of whole 16-byte pieces");
  extern __shared__ __align__(16) uint8_t smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint8_t* slots = smem + warp * kStages * kRow;
  const int64_t rows = p.row_end[p.nmat - 1], nw = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t w0 = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  // Starts the copies of flat row `row` into slot `slot` (a commit group
  // either way, so that the wait below counts rows).
  auto stage = [&](int64_t row, int slot) {
    if (row < rows) {
      const int m = matrix_of(p, row);
      const uint8_t* src = p.w[m].data + row_in_matrix(p, m, row) * p.w[m].nb[1];
      uint8_t* dst = slots + slot * kRow;
#pragma unroll
      for (int j = 0; j < (kPieces + 31) / 32; ++j) {
        const int i = lane + 32 * j;
        if (i < kPieces) __pipeline_memcpy_async(dst + 16 * i, src + 16 * i, 16);
      }
    }
    __pipeline_commit();
  };
  auto stage_first = [&] {
#pragma unroll
    for (int s = 0; s < kStages; ++s) stage(w0 + s * nw, s);
  };
  if (p.early) stage_first();
  pdl_start();
  if (!p.early) stage_first();
  LaneActs a;
  load_lane_acts(p, lane, a);
  float scale = 1.0f;
  if (p.pending.ssq != nullptr) {
    scale = norm_factor(p.pending, kHeldK, lane);
    if (p.pending.norm != nullptr) norm_outputs(p.pending, kHeldK, scale, w0, nw, lane);
  }
  int slot = 0;
  for (int64_t row = w0; row < rows; row += nw) {
    __pipeline_wait_prior(kStages - 1);
    __syncwarp();
    const uint8_t* s = slots + slot * kRow;
    float v;
    if constexpr (T == kQ4_K)
      v = q4k_half(s, lane, a);
    else
      v = q6k_half(s, lane, a);
    __syncwarp();  // the slot is read before its next copies start
    stage(row + kStages * nw, slot);
    slot = slot + 1 == kStages ? 0 : slot + 1;
    const float sum = warp_sum(v) * scale;
    if (lane == 0) {
      const int m = matrix_of(p, row);
      reinterpret_cast<float*>(p.d[m].data)[row_in_matrix(p, m, row)] = sum;
    }
  }
}

// Blocks of matvec_held<T> that fit on a multiprocessor of the current
// device, 0 where its shared memory cannot be had. A block's dynamic shared
// memory past 48 KB must be allowed per device (a function's attributes
// belong to the device's context: `--split-mode layer` launches it on
// several), so each device is asked once.
template <uint32_t T>
int held_blocks_per_sm() {
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static int blocks[kMaxDevices];
  static bool asked[kMaxDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    (void)cudaGetLastError();
    return 0;
  }
  const std::lock_guard<std::mutex> lock(mu);
  if (!asked[dev]) {
    constexpr int smem = kWarps * kStages * HeldRow<T>::kBytes;
    int n = 0;
    if (cudaFuncSetAttribute(matvec_held<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
            cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, matvec_held<T>, kWarps * 32, smem) !=
            cudaSuccess) {
      (void)cudaGetLastError();  // not a launch's error: the fast path takes the products
      n = 0;
    }
    blocks[dev] = n;
    asked[dev] = true;
  }
  return blocks[dev];
}

template <uint32_t T>
bool launch_t(const FastArgs& p, cudaStream_t stream, int sm_count) {
  const int per_sm = held_blocks_per_sm<T>();
  if (per_sm <= 0) return false;
  const int64_t rows = p.row_end[p.nmat - 1];
  const int64_t blocks =
      std::min<int64_t>((rows + kWarps - 1) / kWarps, int64_t{per_sm} * sm_count);
  launch_pdl(matvec_held<T>, static_cast<unsigned>(blocks), kWarps * 32,
             static_cast<size_t>(kWarps * kStages * HeldRow<T>::kBytes), stream, p);
  return true;
}

}  // namespace

bool launch_matvec_held(uint32_t type, const FastArgs& p, cudaStream_t stream, int sm_count) {
  if ((type != kQ4_K && type != kQ6_K) || sm_count <= 0 || p.ncols != 1 || p.epi.res != nullptr)
    return false;
  const int64_t row_bytes = kHeldK / 256 * (type == kQ4_K ? 144 : 210);
  if (p.row_end[p.nmat - 1] * row_bytes < kHeldMinBytes) return false;
  for (int m = 0; m < p.nmat; ++m) {
    if (p.w[m].ne[0] != kHeldK || !rows_aligned16(p.w[m])) return false;
  }
  return type == kQ4_K ? launch_t<kQ4_K>(p, stream, sm_count)
                       : launch_t<kQ6_K>(p, stream, sm_count);
}

}  // namespace polyinfer::cuda
