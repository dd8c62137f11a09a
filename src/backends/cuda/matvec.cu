// MUL_MAT for decode (at most kMaxVecCols activation columns): a warp per
// weight row reads the row once, in its stored format, and dots it with every
// column in float32. Lanes take consecutive 8-value chunks, so a warp reads
// contiguous bytes of the row; each lane keeps two chunks in flight.
#include "backends/cuda/matvec.hpp"
#include "backends/cuda/quant_decode.cuh"

namespace polyinfer::cuda {
namespace {

constexpr int kWarps = 4;

struct MatvecArgs {
  View w, a, d;
  uint32_t type;
  int ncols;
  int64_t r2, r3;  // activation batches per weight batch (dims 2 and 3)
};

__global__ __launch_bounds__(kWarps * 32) void matvec_kernel(MatvecArgs p) {
  const int lane = threadIdx.x % 32;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (n >= p.w.ne[1]) return;
  const int64_t b2 = blockIdx.y % p.a.ne[2], b3 = blockIdx.y / p.a.ne[2];
  const uint8_t* row = row_at(p.w, n, b2 / p.r2, b3 / p.r3);
  const float* act[kMaxVecCols];
  for (int c = 0; c < kMaxVecCols; ++c) {
    act[c] = reinterpret_cast<const float*>(row_at(p.a, c < p.ncols ? c : 0, b2, b3));
  }
  float acc[kMaxVecCols] = {};
  const int64_t k = p.w.ne[0];
  // F16/BF16 rows go by chunks when they split into whole chunks; F32 rows
  // and ragged rows go by element (a coalesced 4-byte load per lane).
  const bool plain = p.type == kF32 || p.type == kF16 || p.type == kBF16;
  const bool chunked = !plain || (p.type != kF32 && k % 8 == 0);
  if (chunked) {
    const int64_t chunks = k / 8;
#pragma unroll 2
    for (int64_t ch = lane; ch < chunks; ch += 32) {
      float w[8];
      decode8(p.type, row, ch, w);
#pragma unroll
      for (int c = 0; c < kMaxVecCols; ++c) {
        if (c < p.ncols) {
          const float* x = act[c] + 8 * ch;
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[c] += w[e] * x[e];
        }
      }
    }
  } else {
    for (int64_t e = lane; e < k; e += 32) {
      const float w = load_plain(p.type, row, e);
#pragma unroll
      for (int c = 0; c < kMaxVecCols; ++c) {
        if (c < p.ncols) acc[c] += w * act[c][e];
      }
    }
  }
#pragma unroll
  for (int c = 0; c < kMaxVecCols; ++c) {
    if (c < p.ncols) {
      const float s = warp_sum(acc[c]);
      if (lane == 0) reinterpret_cast<float*>(row_at(p.d, c, b2, b3))[n] = s;
    }
  }
}

}  // namespace

void launch_matvec(const View& w, uint32_t type, const View& a, const View& d,
                   cudaStream_t stream) {
  for (int64_t c0 = 0; c0 < a.ne[1]; c0 += kMaxVecCols) {
    MatvecArgs p{w,
                 a,
                 d,
                 type,
                 static_cast<int>(a.ne[1] - c0 < kMaxVecCols ? a.ne[1] - c0 : kMaxVecCols),
                 a.ne[2] / w.ne[2],
                 a.ne[3] / w.ne[3]};
    p.a.data += c0 * a.nb[1];
    p.d.data += c0 * d.nb[1];
    const dim3 grid(static_cast<unsigned>((w.ne[1] + kWarps - 1) / kWarps),
                    static_cast<unsigned>(a.ne[2] * a.ne[3]));
    matvec_kernel<<<grid, kWarps * 32, 0, stream>>>(p);
  }
}

}  // namespace polyinfer::cuda
