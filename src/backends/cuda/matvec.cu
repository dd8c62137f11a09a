// MUL_MAT for decode (at most kMaxVecCols activation columns), weights read
// once in their stored format.
//
// Fast path (Q4_0, Q4_K, Q5_K, Q6_K, Q8_0, F16; unbatched): a warp per weight row
// (two for Q4_K or Q6_K rows of one segment, of one type and no folded
// norm: launch_fast_nc).
// The warp copies a segment of its row (up to 4,096 values) into shared
// memory with 16-byte asynchronous copies (cp.async) of the aligned bytes
// around it, so the row is read from DRAM in whole sectors whatever its
// alignment, then dots it from shared memory. Q4_0 and K-quant rows are
// dotted with activations quantized once per call to 8-bit blocks of 32
// (float32 scale, docs/OPS.md allows it) through __dp4a; Q8_0 rows with the
// same codes plus their residual codes (act_quant.cuh: 16-bit activations,
// two __dp4a; with the codes alone the TinyStories-656K-Q8_0 "Hello" oracle
// flips at a 0.008 logit margin, as on the CPU, and with float32 activations
// the conversions bounded it at 1.3 TB/s); F16 rows with the float32
// activations (16-byte aligned rows: no staging; one column of rows up to
// kMaxF16RegsK values with the activations in registers, matvec_f16_rows;
// otherwise several threads per row, matvec_f16_direct). One launch may
// cover up to kMaxGroupMats matrices that share the activations (Q, K and V;
// gate and up): their rows are one grid. A product may also do the ADD,
// RMS_NORM and MUL after it (norm_epilogue; matvec.hpp's MatvecNormQ), or
// the residual ADD after it and the RMS_NORM and MUL before it (matvec_fast's
// FOLD; matvec.hpp's MatvecFold). Q4_K and Q6_K matrices share a launch
// (kKQuantMix: each warp's rows are one matrix's, dotted as its type). One
// column over long Q4_K or Q6_K rows of 4,096 values takes matvec_held.cu's
// kernel instead, which holds each lane's activations in registers.
// Other types and batched products take the generic kernel: lanes decode
// consecutive 8-value chunks (quant_decode.cuh) in float32.
#include <cuda_pipeline.h>

#include <algorithm>

#include "backends/cuda/act_quant.cuh"
#include "backends/cuda/matvec.hpp"
#include "backends/cuda/matvec_args.cuh"
#include "backends/cuda/matvec_held.hpp"
#include "backends/cuda/norm_q.cuh"
#include "backends/cuda/packed_loads.cuh"
#include "backends/cuda/pdl.cuh"
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
  pdl_start();
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

// ---- fast path -------------------------------------------------------------

constexpr int kFastWarps = 8;  // rows per block

// Values per staged segment and its bytes, per type.
template <uint32_t T>
struct Fmt;
template <>
struct Fmt<kQ4_0> {
  static constexpr int kBlock = 32, kBytes = 18, kSeg = 4096;
};
template <>
struct Fmt<kQ4_K> {
  static constexpr int kBlock = 256, kBytes = 144, kSeg = 4096;
};
template <>
struct Fmt<kQ5_K> {
  static constexpr int kBlock = 256, kBytes = 176, kSeg = 4096;
};
template <>
struct Fmt<kQ6_K> {
  static constexpr int kBlock = 256, kBytes = 210, kSeg = 4096;
};
template <>
struct Fmt<kQ8_0> {
  static constexpr int kBlock = 32, kBytes = 34, kSeg = 4096;
};
template <>
struct Fmt<kF16> {
  static constexpr int kBlock = 1, kBytes = 2, kSeg = 2048;
};

// The launch type of a group of Q4_K and Q6_K matrices (not a GGUF id): a
// warp takes one row (launch_fast_nc), staged and dotted as its matrix's
// type (FastArgs::q6k_mats, as_type); the slots hold the larger Q6_K
// segment. One launch puts llama.cpp Q4_K_M's Q6_K V rows in the wave of Q
// and K's, not in a kernel of their own (fusion.cpp's matvec_group_at).
constexpr uint32_t kKQuantMix = 0x10000;
template <>
struct Fmt<kKQuantMix> : Fmt<kQ6_K> {};
static_assert(Fmt<kQ4_K>::kSeg == Fmt<kQ6_K>::kSeg && Fmt<kQ4_K>::kBlock == Fmt<kQ6_K>::kBlock,
              "a mixed group's segments cut both types' rows alike");

// Shared-memory bytes per warp: a segment plus the alignment slack.
template <uint32_t T>
struct Slot {
  static constexpr int kBytes =
      (Fmt<T>::kSeg / Fmt<T>::kBlock * Fmt<T>::kBytes + 32 + 15) / 16 * 16;
};

// Warps per block: kFastWarps, fewer where their R slots each would pass the
// 48 KB of static shared memory a block may have.
template <uint32_t T, int R>
struct FastWarps {
  static constexpr int kN =
      Slot<T>::kBytes * kFastWarps * R <= 48 * 1024 ? kFastWarps : kFastWarps / R;
};

// Σ over 8 consecutive float32 activations x (16-byte aligned when a16) of w.
__device__ __forceinline__ float dot8(const float w[8], const float* x, bool a16) {
  if (a16) {
    const float4 x0 = __ldg(reinterpret_cast<const float4*>(x));
    const float4 x1 = __ldg(reinterpret_cast<const float4*>(x) + 1);
    return w[0] * x0.x + w[1] * x0.y + w[2] * x0.z + w[3] * x0.w + w[4] * x1.x + w[5] * x1.y +
           w[6] * x1.z + w[7] * x1.w;
  }
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += w[i] * __ldg(x + i);
  return s;
}

// Eight words of shared memory at p: two 16-byte loads where p is 16-byte
// aligned, else 2-byte aligned loads.
__device__ __forceinline__ void load32x8(const uint8_t* p, bool a16, uint32_t q[8]) {
  if (a16) {
    const uint4 v0 = *reinterpret_cast<const uint4*>(p);
    const uint4 v1 = *reinterpret_cast<const uint4*>(p + 16);
    q[0] = v0.x, q[1] = v0.y, q[2] = v0.z, q[3] = v0.w;
    q[4] = v1.x, q[5] = v1.y, q[6] = v1.z, q[7] = v1.w;
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) q[i] = lds32(p + 4 * i);
  }
}

// Σ over unit u (32 values) of a staged segment `s` times activation block
// codes `x` (8 words), in units of (weight scale · activation scale), plus
// the block's min term through `asum` (activation scale · Σ codes).
template <uint32_t T>
__device__ __forceinline__ float unit_dot(const uint8_t* s, int u, const int x[8], float ad,
                                          float asum, bool a16) {
  if constexpr (T == kQ4_0) {
    const uint8_t* b = s + u * 18;
    const float d = f16_bits_to_f32(ld16(b));
    uint32_t qs[4];
    lds128(b + 2, qs);
    int dot = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t q = qs[i];
      dot = dp4a(q & 0x0f0f0f0fu, x[i], dot);
      dot = dp4a((q >> 4) & 0x0f0f0f0fu, x[4 + i], dot);
    }
    // Σ (q − 8)·x = Σ q·x − 8·Σ x: the offset through asum, not per byte
    // (__vsub4 has no sm_90 instruction; the products are issue-bound).
    return d * (ad * static_cast<float>(dot) - 8.0f * asum);
  } else if constexpr (T == kQ4_K || T == kQ5_K) {
    // Q5_K: Q4_K's scales and nibbles (at 48, not 16), and bit j of each
    // value's byte of qh (32 bytes at 16) as the fifth bit.
    constexpr bool kFive = T == kQ5_K;
    const uint8_t* b = s + (u / 8) * Fmt<T>::kBytes;
    const int j = u % 8;
    const float d = f16_bits_to_f32(ld16(b)), dmin = f16_bits_to_f32(ld16(b + 2));
    // scale_min_k4 without a branch (lanes of a warp take different j).
    const uint8_t* sb = b + 4;
    const int lo = j < 4 ? j : j + 4, hi = j < 4 ? j + 4 : j - 4;
    const int s_lo = sb[lo], s_hi = sb[hi];
    const int sc = j < 4 ? (s_lo & 63) : ((s_lo & 0x0F) | ((s_hi >> 6) << 4));
    const int mn = j < 4 ? (s_hi & 63) : ((s_lo >> 4) | ((sb[j] >> 6) << 4));
    const uint8_t* qs = b + (kFive ? 48 : 16) + (j / 2) * 32;
    const int shift = 4 * (j % 2);
    uint32_t q[8], h[8];
    // The block's codes sit at 16-byte aligned addresses (a16; Q5_K's qh too).
    load32x8(qs, a16, q);
    if constexpr (kFive) load32x8(b + 16, a16, h);
    int dot = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      uint32_t v = (q[i] >> shift) & 0x0f0f0f0fu;
      if constexpr (kFive) v |= ((h[i] >> j) & 0x01010101u) << 4;
      dot = dp4a(v, x[i], dot);
    }
    return d * static_cast<float>(sc) * ad * static_cast<float>(dot) -
           dmin * static_cast<float>(mn) * asum;
  } else {  // Q6_K
    const uint8_t* b = s + (u / 8) * 210;
    const int j = u % 8;
    const float d = f16_bits_to_f32(ld16(b + 208));
    const uint8_t* ql = b + (j / 4) * 64 + (j % 2) * 32;
    const uint8_t* qh = b + 128 + (j / 4) * 32;
    const int lshift = 4 * ((j % 4) / 2), hshift = 2 * (j % 4);
    // Σ (q − 32)·x per 16 values as Σ q·x − 32·Σ x, Σ x by __dp4a with ones.
    int dot0 = 0, dot1 = 0, sum0 = 0, sum1 = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t lo = (lds32(ql + 4 * i) >> lshift) & 0x0f0f0f0fu;
      const uint32_t hi = ((lds32(qh + 4 * i) >> hshift) & 0x03030303u) << 4;
      if (i < 4) {
        dot0 = dp4a(lo | hi, x[i], dot0);
        sum0 = dp4a(0x01010101u, x[i], sum0);
      } else {
        dot1 = dp4a(lo | hi, x[i], dot1);
        sum1 = dp4a(0x01010101u, x[i], sum1);
      }
    }
    dot0 -= 32 * sum0;
    dot1 -= 32 * sum1;
    const float sc0 = static_cast<float>(static_cast<int8_t>(b[192 + 2 * j]));
    const float sc1 = static_cast<float>(static_cast<int8_t>(b[193 + 2 * j]));
    return d * ad * (sc0 * static_cast<float>(dot0) + sc1 * static_cast<float>(dot1));
  }
}

// Segment `seg` of flat row `row` over the group's matrices (matrix m has
// rows [row_end[m - 1], row_end[m])): its first byte, values and matrix.
struct SegRef {
  const uint8_t* src;
  int64_t k0;
  int len, m;
  int64_t n;  // row within matrix m
};

template <uint32_t U>
struct TypeC {
  static constexpr uint32_t kT = U;
};

// f(TypeC<U>{}) with U the type of rows that launch type T dots: T, or under
// kKQuantMix Q6_K where `q6` (the rows' matrix is Q6_K), else Q4_K. `q6` is
// uniform over the warp, so the branch does not split it.
template <uint32_t T, class F>
__device__ __forceinline__ void as_type(bool q6, F&& f) {
  if constexpr (T == kKQuantMix) {
    if (q6)
      f(TypeC<kQ6_K>{});
    else
      f(TypeC<kQ4_K>{});
  } else {
    f(TypeC<T>{});
  }
}

template <uint32_t T>
__device__ __forceinline__ SegRef seg_ref(const FastArgs& p, int64_t row, int64_t seg) {
  using F = Fmt<T>;
  const int m = matrix_of(p, row);
  const View& w = p.w[m];
  const int64_t n = row_in_matrix(p, m, row), k = w.ne[0];
  const int64_t k0 = seg * F::kSeg;
  const int len = static_cast<int>(k - k0 < F::kSeg ? k - k0 : F::kSeg);
  return {w.data + n * w.nb[1] + k0 / F::kBlock * F::kBytes, k0, len, m, n};
}

// Starts the 16-byte asynchronous copies of a segment's aligned bytes into
// `slot`; returns the segment's offset in it.
template <uint32_t T>
__device__ __forceinline__ int stage(const SegRef& r, uint8_t* slot, int lane) {
  using F = Fmt<T>;
  const int nbytes = r.len / F::kBlock * F::kBytes;
  const uintptr_t a0 = reinterpret_cast<uintptr_t>(r.src) & ~uintptr_t{15};
  const int head = static_cast<int>(reinterpret_cast<uintptr_t>(r.src) - a0);
  const int n16 = (head + nbytes + 15) / 16;
  for (int i = lane; i < n16; i += 32) {
    __pipeline_memcpy_async(slot + 16 * i, reinterpret_cast<const void*>(a0 + 16 * i), 16);
  }
  return head;
}

// The 8-bit activations of one column that a kNormMatvec product's block
// made in its shared memory (fold_norm_acts): codes [K], d and d · Σ codes
// per block of 32 [K/32].
struct SmemActs {
  const int8_t* q;
  const float* d;
  const float* s;
};

// acc[i][c] += the staged segment s[i] (16-byte aligned when a16[i]) of row
// i < nrows (of R, nrows uniform over the warp) times activation column c's
// values [k0, k0 + len). The rows share each activation load. SM: the
// quantized activations are `sa`'s (one column), not p's in scratch.
template <uint32_t T, int NC, int R, bool SM = false>
__device__ __forceinline__ void segment_dot(const FastArgs& p, const uint8_t* const s[R],
                                            const bool a16[R], int nrows, int64_t k, int64_t k0,
                                            int len, int ncols, int lane, float acc[R][NC],
                                            const SmemActs& sa = {}) {
  if constexpr (T == kF16) {
    static_assert(R == 1, "F16 rows go one per warp");
    // Lane takes 8 consecutive values at a time.
    for (int e = 8 * lane; e < len; e += 256) {
      float wv[8];
      if (a16[0]) {
        f16x8_to_f32(s[0] + 2 * e, wv);
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) wv[i] = f16_bits_to_f32(ld16(s[0] + 2 * (e + i)));
      }
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (c < ncols) {
          const float* x = reinterpret_cast<const float*>(p.a.data + c * p.a.nb[1]) + k0 + e;
          acc[0][c] += dot8(wv, x, p.act16);
        }
      }
    }
  } else if constexpr (T == kQ8_0) {
    static_assert(R == 1, "Q8_0 rows go one per warp (launch_fast_nc)");
    // A lane takes 16 consecutive values (half a block) at a time, so that a
    // warp's code loads are 512 contiguous bytes. The sum is in units of
    // 1/kLoSteps of (weight scale · activation scale): kernel end rescales.
#pragma unroll 2
    for (int e = 16 * lane; e < len; e += 512) {
      const uint8_t* b = s[0] + (e / 32) * 34;
      const float dw = f16_bits_to_f32(ld16(b));
      uint32_t q[4];
      lds128(b + 2 + (e & 16), q);
      const int64_t ai = k0 + e;
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (c < ncols) {
          const int4 h = __ldg(reinterpret_cast<const int4*>(p.aq + c * k + ai));
          const int4 l = __ldg(reinterpret_cast<const int4*>(p.alo + c * k + ai));
          int sh = dp4a(q[0], h.x, 0), sl = dp4a(q[0], l.x, 0);
          sh = dp4a(q[1], h.y, sh), sl = dp4a(q[1], l.y, sl);
          sh = dp4a(q[2], h.z, sh), sl = dp4a(q[2], l.z, sl);
          sh = dp4a(q[3], h.w, sh), sl = dp4a(q[3], l.w, sl);
          // |sh| <= 16 · 127 · 127, so sh · 254 + sl fits in 32 bits.
          const int sum = sh * static_cast<int>(kLoSteps) + sl;
          acc[0][c] += dw * __ldg(p.ad + c * (k / 32) + ai / 32) * static_cast<float>(sum);
        }
      }
    }
  } else {
    const int units = len / 32;
#pragma unroll 4
    for (int u = lane; u < units; u += 32) {
      const int64_t ub = k0 / 32 + u;  // activation block
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (c < ncols) {
          int4 x0, x1;
          float ad, as;
          if constexpr (SM) {
            const int4* xv = reinterpret_cast<const int4*>(sa.q + 32 * ub);
            x0 = xv[0], x1 = xv[1];
            ad = sa.d[ub], as = sa.s[ub];
          } else {
            const int4* xv = reinterpret_cast<const int4*>(p.aq + c * k + 32 * ub);
            x0 = __ldg(xv), x1 = __ldg(xv + 1);
            const int64_t ab = c * (k / 32) + ub;
            ad = __ldg(p.ad + ab), as = __ldg(p.as + ab);
          }
          const int x[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
          for (int i = 0; i < R; ++i) {
            if (i < nrows) acc[i][c] += unit_dot<T>(s[i], u, x, ad, as, a16[i]);
          }
        }
      }
    }
  }
}

// Block 0's threads write the folded norm's outputs: norm = x · r
// and out = norm · nw (matvec.hpp's MatvecFold), 8 values per chunk, in
// node order where the two share elements.
__device__ void write_folded_norm(const MatvecFold& f, const float* x, int64_t chunks, float r,
                                  int t, int nt) {
  const float* nw = reinterpret_cast<const float*>(f.nw.data);
  float* norm = reinterpret_cast<float*>(f.norm.data);
  float* out = reinterpret_cast<float*>(f.out.data);
  for (int64_t ch = t; ch < chunks; ch += nt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t e = 8 * ch + 4 * h;
      const float4 v = *reinterpret_cast<const float4*>(x + e);
      const float4 w = *reinterpret_cast<const float4*>(nw + e);
      const float4 nv = make_float4(v.x * r, v.y * r, v.z * r, v.w * r);
      *reinterpret_cast<float4*>(norm + e) = nv;
      *reinterpret_cast<float4*>(out + e) =
          make_float4(nv.x * w.x, nv.y * w.y, nv.z * w.z, nv.w * w.w);
    }
  }
}

// kNormMatvec over quantized rows: the block's NW warps make the 8-bit
// blocks of x · nw (x: RMS_NORM's input, k values) in shared memory at sa,
// 8 lanes per block of 32 values, a float4 each, rounded as
// quantize_block32 does, and return RMS_NORM's factor r = 1 / sqrt(mean(x²)
// + eps), which the products apply to their sums (the codes of a block do
// not change when the block is scaled, as kMatvecNormQ's products use too).
// Every block makes them again from L2 (8-16 KB per vector): a norm kernel
// and its PDL wait between two products had cost 3.9 us in place on
// llama-1b (session 19). Every warp of the block calls it (a block barrier).
template <int NW>
__device__ float fold_norm_acts(const MatvecFold& f, const float* x, int64_t k, int8_t* q, float* d,
                                float* ds, float* red) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float* nw = reinterpret_cast<const float*>(f.nw.data);
  float ss = 0.0f;
  for (int64_t base = 128 * warp; base < k; base += 128 * NW) {
    const int64_t e = base + 4 * lane;
    const bool in = e < k;  // uniform over each 8 lanes (k % 32 == 0)
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f), w = v;
    if (in) {
      v = __ldg(reinterpret_cast<const float4*>(x + e));
      w = __ldg(reinterpret_cast<const float4*>(nw + e));
    }
    ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
    const float y[4] = {v.x * w.x, v.y * w.y, v.z * w.z, v.w * w.w};
    float amax = fmaxf(fmaxf(fabsf(y[0]), fabsf(y[1])), fmaxf(fabsf(y[2]), fabsf(y[3])));
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float bd = amax / 127.0f;
    uint32_t packed = 0;
    int qsum = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(act_code(y[i], bd));
      qsum += c;
      packed |= static_cast<uint32_t>(c & 0xff) << (8 * i);
    }
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) qsum += __shfl_xor_sync(0xffffffffu, qsum, o);
    if (in) {
      *reinterpret_cast<uint32_t*>(q + e) = packed;
      if (lane % 8 == 0) {
        d[e / 32] = bd;
        ds[e / 32] = bd * static_cast<float>(qsum);
      }
    }
  }
  ss = warp_sum(ss);
  if (lane == 0) red[warp] = ss;
  __syncthreads();
  float tot = 0.0f;
#pragma unroll
  for (int w = 0; w < NW; ++w) tot += red[w];
  return 1.0f / sqrtf(tot / static_cast<float>(k) + f.eps);
}

// A warp per R consecutive flat rows of the group (they may straddle two of
// its matrices), their segments one after another: every segment of the R
// rows is copied in one batch, then dotted against activations loaded once
// for all R rows. (Two slots per warp with the next segment's copies in
// flight while the current one is dotted, and a persistent grid of such
// warps, were slower on the H200: the llama-8b Q4_0 down projection took 18.0
// us against 16.0 us and gate+up 30.8 us against 25.5 us. Session 14 tried
// again with the most shared memory carved out: Q4_K 4096 x 57344 1,936
// against 2,265 GB/s on an H100. A Q4_K kernel without staging, the loads
// straight into registers as for F16 rows, was slower too: 2,165 GB/s with
// eight lanes per super-block, 1,289 with one; see docs/BACKEND_CUDA.md.)
//
// One activation column asks for four blocks per multiprocessor (at most 64
// registers, no spills): on the H200 (session 14) the Q4_0 product of
// 4096 x 57344 went from 1,930 to 2,487 GB/s and Q4_K from 2,598 to 2,730,
// llama-8b Q4_0 tg128 from 317-320 to 338-339 tok/s (Q4_K_M level).
//
// FOLD (one column; matvec.hpp's MatvecFold): kFoldAdd also writes d + res,
// the residual ADD after a single product; kFoldNorm makes the activations
// from RMS_NORM's input and weight in each block (fold_norm_acts) and writes
// the norm's outputs from block 0.
template <uint32_t T, int NC, int R, int FOLD = kFoldNone>
__global__ __launch_bounds__(FastWarps<T, R>::kN * 32,
                             NC == 1 ? 4 : 1) void matvec_fast(FastArgs p, MatvecFold f) {
  static_assert(FOLD == kFoldNone || NC == 1, "a fold takes one column");
  static_assert(T != kKQuantMix || R == 1, "a mixed group's warp takes one row, of one type");
  constexpr int kNW = FastWarps<T, R>::kN;
  constexpr bool kNorm = FOLD == kFoldNorm;
  constexpr int kFoldBlocks = kNorm ? kMaxNormFoldQK / 32 : 1;
  __shared__ __align__(16) uint8_t smem[kNW][R][Slot<T>::kBytes];
  __shared__ __align__(16) int8_t fq[32 * kFoldBlocks];
  __shared__ float fd[kFoldBlocks], fds[kFoldBlocks], red[kNW];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t row0 = (static_cast<int64_t>(blockIdx.x) * kNW + warp) * R;
  const int64_t rows = p.row_end[p.nmat - 1];
  const bool live = row0 < rows;
  // Never in a kMatvecNormQ product (rows % 32 == 0); a kFoldNorm block's
  // warps all make the activations first.
  if (!kNorm && !live) return;
  auto rows_at = [&] { return static_cast<int>(rows - row0 < R ? rows - row0 : R); };
  int nrows = live ? rows_at() : 0;
  const int ncols = NC == 1 ? 1 : p.ncols;
  const int64_t k = p.w[0].ne[0];
  SegRef r[R];
  const uint8_t* s[R];
  bool a16[R];
  // kKQuantMix: the warp's row is Q6_K (as_type).
  auto q6_row = [&] { return T == kKQuantMix && live && (p.q6k_mats >> matrix_of(p, row0)) & 1u; };
  bool q6 = q6_row();
  // Starts the copies of segment `seg` of the warp's rows.
  auto stage_rows = [&](int64_t seg) {
    as_type<T>(q6, [&](auto t) {
      constexpr uint32_t U = decltype(t)::kT;
#pragma unroll
      for (int i = 0; i < R; ++i) {
        if (i < nrows) {
          r[i] = seg_ref<U>(p, row0 + i, seg);
          const int h = stage<U>(r[i], smem[warp][i], lane);
          s[i] = smem[warp][i] + h;
          a16[i] = h == 0;
        }
      }
    });
    __pipeline_commit();
  };
  // Weights no kernel writes (FastArgs::early): the first segment streams in
  // while the kernel before this one (which wrote the activations) finishes
  // (pdl.cuh).
  if (p.early && live) stage_rows(0);
  pdl_start();
  if (!p.early && live) stage_rows(0);
  float rn = 1.0f;
  if constexpr (kNorm) {
    const float* x = reinterpret_cast<const float*>(p.a.data);
    rn = fold_norm_acts<kNW>(f, x, k, fq, fd, fds, red);
    if (blockIdx.x == 0 && f.norm.data != nullptr)
      write_folded_norm(f, x, k / 8, rn, threadIdx.x, kNW * 32);
    if (!live) return;
  }
  const SmemActs sa{fq, fd, fds};
  for (;;) {
    float acc[R][NC];
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int c = 0; c < NC; ++c) acc[i][c] = 0.0f;
    }
    for (int64_t seg = 0;;) {
      __pipeline_wait_prior(0);
      __syncwarp();
      as_type<T>(q6, [&](auto t) {
        segment_dot<decltype(t)::kT, NC, R, kNorm>(p, s, a16, nrows, k, r[0].k0, r[0].len, ncols,
                                                   lane, acc, sa);
      });
      if (++seg * Fmt<T>::kSeg >= k) break;
      __syncwarp();  // the segment is consumed before its slot is overwritten
      stage_rows(seg);
    }
    float scale = (T == kQ8_0 ? 1.0f / kLoSteps : 1.0f) * rn;
    if constexpr (NC == 1 && !kNorm) {
      if (p.pending.ssq != nullptr) {
        const float pn = norm_factor(p.pending, k, lane);
        scale *= pn;
        if (p.pending.norm != nullptr)
          norm_outputs(p.pending, k, pn, row0 / R, (rows + R - 1) / R, lane);
      }
    }
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        if (i < nrows && c < ncols) {
          const float v = warp_sum(acc[i][c]) * scale;
          if (lane == 0) {
            reinterpret_cast<float*>(p.d[r[i].m].data + c * p.d[r[i].m].nb[1])[r[i].n] = v;
            if constexpr (FOLD == kFoldAdd) {
              reinterpret_cast<float*>(f.sum.data)[r[i].n] =
                  v + reinterpret_cast<const float*>(f.res.data)[r[i].n];
            }
          }
        }
      }
    }
    if constexpr (!kNorm) {
      if constexpr (NC == 1) {
        if (p.epi.res != nullptr)
          norm_epilogue(p.epi, reinterpret_cast<const float*>(p.d[0].data), r[0].n, nrows, lane);
      }
      break;
    } else {
      // A grid of a few blocks per multiprocessor (launch_fast_r) whose warps
      // step over the row groups: each block makes the activations once.
      row0 += static_cast<int64_t>(gridDim.x) * kNW * R;
      if (row0 >= rows) break;
      nrows = rows_at();
      q6 = q6_row();
      __syncwarp();  // the last segment is consumed before its slot is overwritten
      stage_rows(0);
    }
  }
}

// ---- F16 rows, direct loads -----------------------------------------------
//
// TPR threads per weight row (kF16Threads / TPR rows per block), each thread
// holding L 16-byte weight loads in flight (2 L for a warp per row; see S
// below; non-coherent, not kept in L1, so that the activations stay there)
// before it converts and dots them. Rows
// must start 16-byte aligned (f16_direct); others take the staged kernel.
// On the H200 (session 13, tg128) this took llama-8b F16 from 160 to 195
// tok/s and llama-1b F16 from 717 to 852 against the staged warp per row;
// launch_f16_direct says which TPR and L each row length gets.
constexpr int kF16Threads = 128;

__device__ __forceinline__ uint4 ld_stream16(const uint8_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// FOLD kFoldAdd (one activation column): also writes d + res to sum, the
// residual ADD after a single product (matvec.hpp's MatvecFold).
template <int NC, int TPR, int L, int FOLD>
__global__ __launch_bounds__(kF16Threads) void matvec_f16_direct(FastArgs p, MatvecFold f) {
  static_assert(FOLD == kFoldNone || (FOLD == kFoldAdd && NC == 1), "the ADD of one column");
  constexpr int kRows = kF16Threads / TPR;
  __shared__ float part[kF16Threads / 32][NC];
  const int t = threadIdx.x % TPR, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRows + threadIdx.x / TPR;
  const int64_t rows = p.row_end[p.nmat - 1];
  const int ncols = NC == 1 ? 1 : p.ncols;
  float acc[NC];
#pragma unroll
  for (int c = 0; c < NC; ++c) acc[c] = 0.0f;
  int m = 0;
  int64_t n = 0, chunks = 0;
  const uint8_t* w = nullptr;
  if (row < rows) {
    while (m + 1 < p.nmat && row >= p.row_end[m]) ++m;
    n = row - (m == 0 ? 0 : p.row_end[m - 1]);
    w = p.w[m].data + n * p.w[m].nb[1];
    chunks = p.w[m].ne[0] / 8;
  }
  // S sets of L loads in flight: a set is loaded again as soon as it has been
  // dotted, while the other set's loads are still out. Two sets where a warp
  // takes a row (rows of up to 2,048 values: a row's loads all in flight at
  // once): llama-1b F16 tg128 838 against 808 tok/s on an H200, +1-2% on an
  // H100 (session 15). One set for longer rows, where two lost 2.5% (llama-8b
  // F16, H100).
  constexpr int S = TPR == 32 ? 2 : 1;
  constexpr int64_t kStep = int64_t{TPR} * L;
  uint4 v[S][L];
  // Set s's L loads from chunk c0 on.
  auto load = [&](int s, int64_t c0) {
#pragma unroll
    for (int i = 0; i < L; ++i) {
      if (c0 + i * TPR < chunks) v[s][i] = ld_stream16(w + 16 * (c0 + i * TPR));
    }
  };
  auto load_first = [&] {
#pragma unroll
    for (int s = 0; s < S; ++s) load(s, t + s * kStep);
  };
  // Weights no kernel writes: the first loads are issued before the wait (pdl.cuh).
  if (p.early) load_first();
  pdl_start();
  if (!p.early) load_first();
  float res = 0.0f;
  if constexpr (FOLD == kFoldAdd) {
    if (t == 0 && row < rows) res = reinterpret_cast<const float*>(f.res.data)[n];
  }
  for (int64_t c0 = t; c0 < chunks; c0 += S * kStep) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
#pragma unroll
      for (int i = 0; i < L; ++i) {
        const int64_t ch = c0 + s * kStep + i * TPR;
        if (ch < chunks) {
          float wv[8];
          f16x8_regs_to_f32(v[s][i], wv);
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            if (c < ncols) {
              const float* x = reinterpret_cast<const float*>(p.a.data + c * p.a.nb[1]) + 8 * ch;
              acc[c] += dot8(wv, x, p.act16);
            }
          }
        }
      }
      load(s, c0 + (S + s) * kStep);
    }
  }
#pragma unroll
  for (int c = 0; c < NC; ++c) acc[c] = warp_sum(acc[c]);
  if constexpr (TPR > 32) {
    if (lane == 0) {
#pragma unroll
      for (int c = 0; c < NC; ++c) part[warp][c] = acc[c];
    }
    __syncthreads();
    if (t != 0) return;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      for (int i = 1; i < TPR / 32; ++i) acc[c] += part[warp + i][c];
    }
  } else if (lane != 0) {
    return;
  }
  if (row >= rows) return;
#pragma unroll
  for (int c = 0; c < NC; ++c) {
    if (c < ncols) reinterpret_cast<float*>(p.d[m].data + c * p.d[m].nb[1])[n] = acc[c];
  }
  if constexpr (FOLD == kFoldAdd) reinterpret_cast<float*>(f.sum.data)[n] = acc[0] + res;
}

// F16 rows of up to kMaxF16RegsK values, one activation column (every
// llama-8b and llama-1b decode product), the activations in registers: a
// block of NT threads takes R consecutive flat rows; thread t holds chunks t +
// NT·i (i < kC) of the activations, loaded once for all R rows, and all its R
// × kC 16-byte weight loads are in flight at once. matvec_f16_direct re-reads
// the float32 activations from L1 for every row, twice the bytes it reads from
// DRAM: with the norm's weight row read beside them too, llama-8b F16 fell
// from 195 to 169 tok/s (H200, session 20). Here llama-8b F16 went from
// 191-193 to 211-217 tok/s (session 20, two rows per block everywhere);
// launch_f16_in_regs says how R and NT follow the shape.
constexpr int kF16RowsChunks = 4;  // per thread, rows of up to kMaxF16RowsK
static_assert(kMaxF16RowsK == 8 * kF16RowsChunks * kF16Threads);
constexpr int kF16RegsThreads = 256;  // rows over kMaxF16RowsK values
constexpr int64_t kMaxF16RegsK = 16384;
static_assert(kMaxF16RegsK == 8 * 8 * kF16RegsThreads);  // 8 chunks per thread

template <int R, int FOLD, int NT = kF16Threads, int kC = kF16RowsChunks>
__global__ __launch_bounds__(NT) void matvec_f16_rows(FastArgs p, MatvecFold f) {
  constexpr int kW = NT / 32;
  __shared__ float part[kW][R + 1];  // per warp: each row's sum, then Σ x²
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int64_t rows = p.row_end[p.nmat - 1], row0 = static_cast<int64_t>(blockIdx.x) * R;
  const int64_t chunks = p.w[0].ne[0] / 8;
  // Flat row `row` as matrix m's row n.
  auto locate = [&](int64_t row, int& m, int64_t& n) {
    m = 0;
    while (m + 1 < p.nmat && row >= p.row_end[m]) ++m;
    n = row - (m == 0 ? 0 : p.row_end[m - 1]);
  };
  const uint8_t* wr[R];
#pragma unroll
  for (int j = 0; j < R; ++j) {
    int m;
    int64_t n;
    locate(row0 + j < rows ? row0 + j : rows - 1, m, n);
    wr[j] = p.w[m].data + n * p.w[m].nb[1];
  }
  // Thread t < R writes row row0 + t's sum.
  int my_m = 0;
  int64_t my_n = 0;
  locate(row0 + (t < R ? t : 0) < rows ? row0 + (t < R ? t : 0) : rows - 1, my_m, my_n);
  uint4 v[R][kC];
  auto load = [&] {
#pragma unroll
    for (int j = 0; j < R; ++j) {
#pragma unroll
      for (int i = 0; i < kC; ++i) {
        const int64_t ch = t + i * NT;
        if (ch < chunks) v[j][i] = ld_stream16(wr[j] + 16 * ch);
      }
    }
  };
  // Weights no kernel writes: every load is issued before the wait (pdl.cuh).
  if (p.early) load();
  pdl_start();
  if (!p.early) load();
  float res = 0.0f;
  if constexpr (FOLD == kFoldAdd) {
    if (t < R && row0 + t < rows) res = reinterpret_cast<const float*>(f.res.data)[my_n];
  }
  const float* x = reinterpret_cast<const float*>(p.a.data);
  float xv[kC][8];
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < kC; ++i) {
    const int64_t ch = t + i * NT;
#pragma unroll
    for (int e = 0; e < 8; ++e) xv[i][e] = 0.0f;
    if (ch < chunks) {
      const float4 a0 = __ldg(reinterpret_cast<const float4*>(x + 8 * ch));
      const float4 a1 = __ldg(reinterpret_cast<const float4*>(x + 8 * ch) + 1);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      float nw[8] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
      if constexpr (FOLD == kFoldNorm) {
        const float* w = reinterpret_cast<const float*>(f.nw.data) + 8 * ch;
        const float4 n0 = __ldg(reinterpret_cast<const float4*>(w));
        const float4 n1 = __ldg(reinterpret_cast<const float4*>(w) + 1);
        const float n[8] = {n0.x, n0.y, n0.z, n0.w, n1.x, n1.y, n1.z, n1.w};
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          nw[e] = n[e];
          ss += a[e] * a[e];
        }
      }
#pragma unroll
      for (int e = 0; e < 8; ++e) xv[i][e] = a[e] * nw[e];
    }
  }
  float acc[R];
#pragma unroll
  for (int j = 0; j < R; ++j) {
    acc[j] = 0.0f;
#pragma unroll
    for (int i = 0; i < kC; ++i) {
      if (t + i * NT < chunks) {
        float wv[8];
        f16x8_regs_to_f32(v[j][i], wv);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[j] += wv[e] * xv[i][e];
      }
    }
    acc[j] = warp_sum(acc[j]);
  }
  if constexpr (FOLD == kFoldNorm) ss = warp_sum(ss);
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < R; ++j) part[warp][j] = acc[j];
    part[warp][R] = ss;
  }
  __syncthreads();
  float r = 1.0f;
  if constexpr (FOLD == kFoldNorm) {
    float tot = 0.0f;
#pragma unroll
    for (int w = 0; w < kW; ++w) tot += part[w][R];
    r = 1.0f / sqrtf(tot / static_cast<float>(8 * chunks) + f.eps);
    if (blockIdx.x == 0) write_folded_norm(f, x, chunks, r, t, NT);
  }
  if (t >= R || row0 + t >= rows) return;
  float sum = 0.0f;
#pragma unroll
  for (int w = 0; w < kW; ++w) sum += part[w][t];
  sum *= r;
  reinterpret_cast<float*>(p.d[my_m].data)[my_n] = sum;
  if constexpr (FOLD == kFoldAdd) reinterpret_cast<float*>(f.sum.data)[my_n] = sum + res;
}

// Every F16 row of the group starts 16-byte aligned.
bool f16_direct(const FastArgs& p) {
  for (int m = 0; m < p.nmat; ++m) {
    if (reinterpret_cast<uintptr_t>(p.w[m].data) % 16 != 0 || p.w[m].nb[1] % 16 != 0) return false;
  }
  return true;
}

template <int NC, int TPR, int L, int FOLD>
void launch_f16_shape(const FastArgs& p, const MatvecFold& f, cudaStream_t stream) {
  constexpr int kRows = kF16Threads / TPR;
  const int64_t rows = p.row_end[p.nmat - 1];
  launch_pdl(matvec_f16_direct<NC, TPR, L, FOLD>, static_cast<unsigned>((rows + kRows - 1) / kRows),
             kF16Threads, 0, stream, p, f);
}

template <int R, int FOLD, int NT = kF16Threads, int C = kF16RowsChunks>
void launch_f16_rows(const FastArgs& p, const MatvecFold& f, cudaStream_t stream) {
  const int64_t rows = p.row_end[p.nmat - 1];
  launch_pdl(matvec_f16_rows<R, FOLD, NT, C>, static_cast<unsigned>((rows + R - 1) / R), NT, 0,
             stream, p, f);
}

// R and NT by shape, from Nsight Compute on the H200 (session 21, us per
// product, isolated, against the two rows per block of 128 threads that every
// product of up to 4,096 values took before, and matvec_f16_direct for longer
// rows):
// - a folded norm reads the norm's weights and sums x² once per block, so
//   more rows per block pay off with more rows: 4 rows past 8,192 rows
//   (llama-8b gate/up 60.3 -> 58.6, output 253.8 -> 237.7; llama-1b gate/up
//   27.1 -> 25.8), 2 below (llama-8b Q/K/V 18.3, against 18.8 with 4 and 23.1
//   with 1);
// - without a norm (no fold, or the residual ADD's), one row per block up to
//   4,096 rows and 2 past (llama-8b O 13.7 -> 11.2, llama-1b O 7.3 -> 6.0);
//   rows over 4,096 values (up to 16,384) one row per block of 256 threads
//   whatever the row count (llama-8b down 35.5 -> 34.0, 512 threads 39.1;
//   llama-1b down 16.4 -> 12.7).
// False: nothing launched (rows too long).
template <int FOLD>
bool launch_f16_in_regs(const FastArgs& p, const MatvecFold& f, cudaStream_t stream) {
  const int64_t k = p.w[0].ne[0], rows = p.row_end[p.nmat - 1];
  if constexpr (FOLD == kFoldNorm) {
    if (k > kMaxF16RowsK) return false;
    if (rows > 8192)
      launch_f16_rows<4, FOLD>(p, f, stream);
    else
      launch_f16_rows<2, FOLD>(p, f, stream);
    return true;
  } else {
    if (k <= kMaxF16RowsK) {
      if (rows > 4096)
        launch_f16_rows<2, FOLD>(p, f, stream);
      else
        launch_f16_rows<1, FOLD>(p, f, stream);
    } else if (k <= kMaxF16RegsK / 2) {
      launch_f16_rows<1, FOLD, kF16RegsThreads, 4>(p, f, stream);
    } else if (k <= kMaxF16RegsK) {
      launch_f16_rows<1, FOLD, kF16RegsThreads, 8>(p, f, stream);
    } else {
      return false;
    }
    return true;
  }
}

// FOLD kFoldNorm only where matvec_f16_rows takes the rows (fusion.cpp's
// norm_matvec_at checks kMaxF16RowsK); false: nothing launched.
template <int NC, int FOLD = kFoldNone>
bool launch_f16_direct(const FastArgs& p, cudaStream_t stream, const MatvecFold& f = {}) {
  if (!f16_direct(p)) return false;
  if constexpr (NC == 1) {
    // Its float4 activation loads.
    if (p.act16 && launch_f16_in_regs<FOLD>(p, f, stream)) return true;
  }
  // matvec_f16_direct, as every product took it in session 13: rows of up to
  // 2,048 values (llama-1b's Q/K/V, gate and up) a warp per row, four loads
  // per lane (852 tok/s; 128 threads per row: 797); longer rows 128 threads
  // per row, two loads each (llama-8b 195 tok/s; four loads: 191; a warp per
  // row: 187).
  if constexpr (FOLD == kFoldNorm) {
    return false;
  } else if (p.w[0].ne[0] <= 2048) {
    launch_f16_shape<NC, 32, 4, FOLD>(p, f, stream);
  } else {
    launch_f16_shape<NC, 128, 2, FOLD>(p, f, stream);
  }
  return true;
}

// Activation columns to 8-bit blocks of 32 (act_quant.cuh), a warp per block.
__global__ void quantize_act(View a, int ncols, ActQuantPtrs q) {
  const int64_t k = a.ne[0], nb = k / 32;
  const int64_t blk = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  pdl_start();
  if (blk >= nb * ncols) return;
  const int64_t c = blk / nb, b = blk % nb;
  quantize_block32(reinterpret_cast<const float*>(a.data + c * a.nb[1])[32 * b + threadIdx.x % 32],
                   blk, q);
}

// Types whose fast path dots float32 activations (no scratch).
bool float_acts(uint32_t t) {
  return t == kF16;
}

template <uint32_t T, int NC, int R, int FOLD = kFoldNone>
void launch_fast_r(const FastArgs& p, cudaStream_t stream, const MatvecFold& f = {},
                   int sm_count = 0) {
  constexpr int kWarpsR = FastWarps<T, R>::kN;
  int64_t blocks = (p.row_end[p.nmat - 1] + kWarpsR * R - 1) / (kWarpsR * R);
  if constexpr (FOLD == kFoldNorm) {
    // One wave of the blocks that fit on the device, so that each makes the
    // activations once (a block per 16 rows had made them again per wave:
    // llama-8b Q4_0 tg128 441 -> 335 tok/s, H200).
    // Per kernel, for the first device that launches it (the blocks that fit
    // follow from the kernel's registers and shared memory).
    static const int per_sm = [] {
      int n = 0;
      if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, matvec_fast<T, NC, R, FOLD>,
                                                        kWarpsR * 32, 0) != cudaSuccess) {
        (void)cudaGetLastError();  // not the launch's error: fall back to 4
        n = 0;
      }
      return n > 0 ? n : 4;
    }();
    if (sm_count > 0) blocks = std::min<int64_t>(blocks, int64_t{per_sm} * sm_count);
  }
  launch_pdl(matvec_fast<T, NC, R, FOLD>, static_cast<unsigned>(blocks), kWarpsR * 32, 0, stream, p,
             f);
}

// Two rows per warp for Q4_K or Q6_K rows of one segment (not a mixed
// group's, kKQuantMix, nor under a folded norm): on the H200 (session
// 7, tg128 mean of 5) llama-8b Q4_K_M 258 tok/s against 252, llama-1b Q4_K_M
// 717 against 700 (the QKV product 8.7 us against 11.0, the Q6_K output
// matrix 125 us against 148); no change for Q4_0, and 2 % slower for Q8_0
// and for the down projection's four-segment rows.
//
// Q5_K rows go one per warp: two spill under the 64 registers of four
// blocks per multiprocessor (its fifth bits' words beside the nibbles').
//
// Under a folded norm, one row per warp: two cost llama-8b Q4_K_M tg128 6%
// (402 -> 381 tok/s) and llama-1b Q4_K_M 2% (H200, session 25). One row
// everywhere cost llama-8b Q4_K_M 4% (432 -> 415); two only where the grid
// still had a block per multiprocessor was within the spread (session 34).
template <uint32_t T, int NC, int FOLD = kFoldNone>
void launch_fast_nc(const FastArgs& p, cudaStream_t stream, const MatvecFold& f = {},
                    int sm_count = 0) {
  if constexpr ((T == kQ4_K || T == kQ6_K) && FOLD != kFoldNorm) {
    if (p.w[0].ne[0] <= Fmt<T>::kSeg) return launch_fast_r<T, NC, 2, FOLD>(p, stream, f);
  }
  launch_fast_r<T, NC, 1, FOLD>(p, stream, f, sm_count);
}

// A fold over quantized rows of one column (matvec_fast's FOLD); false,
// with nothing launched, for Q8_0 under a folded norm (its residual codes),
// rows past kMaxNormFoldQK values there, or a type off the fast path.
template <int FOLD>
bool launch_fast_fold(uint32_t type, const FastArgs& p, const MatvecFold& f, cudaStream_t stream,
                      int sm_count) {
  // The block's codes in shared memory (matvec_fast's fq).
  if (FOLD == kFoldNorm && p.a.ne[0] > kMaxNormFoldQK) return false;
  switch (type) {
    case kQ4_0:
      launch_fast_nc<kQ4_0, 1, FOLD>(p, stream, f, sm_count);
      return true;
    case kQ4_K:
      launch_fast_nc<kQ4_K, 1, FOLD>(p, stream, f, sm_count);
      return true;
    case kQ5_K:
      launch_fast_nc<kQ5_K, 1, FOLD>(p, stream, f, sm_count);
      return true;
    case kQ6_K:
      launch_fast_nc<kQ6_K, 1, FOLD>(p, stream, f, sm_count);
      return true;
    case kKQuantMix:
      launch_fast_nc<kKQuantMix, 1, FOLD>(p, stream, f, sm_count);
      return true;
    case kQ8_0:
      if constexpr (FOLD == kFoldNorm) {
        return false;
      } else {
        launch_fast_nc<kQ8_0, 1, FOLD>(p, stream, f);
        return true;
      }
    default:
      return false;
  }
}

template <uint32_t T>
void launch_fast_t(const FastArgs& p, cudaStream_t stream) {
  if constexpr (T == kF16) {
    if (p.ncols == 1 ? launch_f16_direct<1>(p, stream)
                     : launch_f16_direct<kMaxVecCols>(p, stream)) {
      return;
    }
  }
  if (p.ncols == 1)
    launch_fast_nc<T, 1>(p, stream);
  else
    launch_fast_nc<T, kMaxVecCols>(p, stream);
}

void launch_fast(uint32_t type, const FastArgs& p, cudaStream_t stream) {
  switch (type) {
    case kQ4_0:
      return launch_fast_t<kQ4_0>(p, stream);
    case kQ4_K:
      return launch_fast_t<kQ4_K>(p, stream);
    case kQ5_K:
      return launch_fast_t<kQ5_K>(p, stream);
    case kQ6_K:
      return launch_fast_t<kQ6_K>(p, stream);
    case kKQuantMix:
      return launch_fast_t<kKQuantMix>(p, stream);
    case kQ8_0:
      return launch_fast_t<kQ8_0>(p, stream);
    default:
      return launch_fast_t<kF16>(p, stream);
  }
}

// launch_type of types no one launch takes together.
constexpr uint32_t kNoGroup = 0xffffffffu;

// The launch type of n matrices' weights of types[m]: their one type,
// kKQuantMix for the types one launch takes together (matvec_types_group:
// Q4_K and Q6_K), else kNoGroup.
uint32_t launch_type(const uint32_t* types, int n) {
  bool same = true, together = true;
  for (int m = 0; m < n; ++m) {
    same = same && types[m] == types[0];
    together = together && matvec_types_group(types[0], types[m]);
  }
  return same ? types[0] : together ? kKQuantMix : kNoGroup;
}

// The fast path's arguments over `n` matrices of types[m] for activation
// columns [c0, c0 + ncols).
FastArgs fast_args(const View* w, const View* d, int n, const uint32_t* types, const View& a,
                   int64_t c0, int ncols, const MatvecEnv& env) {
  FastArgs p{};
  int64_t rows = 0;
  for (int m = 0; m < n; ++m) {
    p.w[m] = w[m];
    p.d[m] = d[m];
    p.d[m].data += c0 * d[m].nb[1];
    rows += w[m].ne[1];
    p.row_end[m] = rows;
    if (types[m] == kQ6_K) p.q6k_mats |= 1u << m;
  }
  p.nmat = n;
  p.ncols = ncols;
  p.a = a;
  p.a.data += c0 * a.nb[1];
  p.act16 = reinterpret_cast<uintptr_t>(p.a.data) % 16 == 0 && a.nb[1] % 16 == 0;
  p.early = env.weights_early;
  return p;
}

// Points p at the 8-bit blocks of its activations in scratch, quantizing
// them first unless the cache holds them (then with its pending norm: one
// column, as the cache's).
void fast_acts(FastArgs& p, uint32_t type, const MatvecEnv& env) {
  const int64_t k = p.a.ne[0];
  const bool residual = type == kQ8_0;
  ActQuantCache* cache = env.cache;
  const bool cached = cache != nullptr &&
                      cache->holds(p.a.data, k, p.ncols, p.a.nb[1], ActForm::kQ8) &&
                      (cache->residual || !residual);
  const size_t offset = cached ? cache->offset : 0;
  const ActQuantPtrs q = act_quant_at(env.scratch + offset, k, p.ncols, residual);
  p.aq = q.aq;
  p.alo = q.lo;
  p.ad = q.ad;
  p.as = q.as;
  if (!cached) {
    launch_quantize_act(p.a, p.ncols, q, env.stream);
    if (cache != nullptr) *cache = ActQuantCache{p.a.data, k, p.ncols, p.a.nb[1], residual, true};
  } else if (cache->norm.ssq != nullptr) {
    p.pending = cache->norm;
    // The first product writes the norm's outputs.
    cache->norm.norm = cache->norm.out = nullptr;
  }
}

// One column over activations that the cache says a kNormMatvec unit made
// from RMS_NORM's input and weight (ActForm::kNormFold): the products fold
// the norm the same way, without its outputs; false, with nothing launched,
// when they cannot (Q8_0, an output over x or nw).
bool refold(const View* d, int n, uint32_t type, const FastArgs& p, const MatvecEnv& env) {
  const ActQuantCache* c = env.cache;
  const int64_t k = p.a.ne[0];
  if (c == nullptr || p.ncols != 1 || !c->holds(p.a.data, k, 1, p.a.nb[1], ActForm::kNormFold))
    return false;
  for (int m = 0; m < n; ++m) {
    if (views_overlap(d[m], c->fold.x) || views_overlap(d[m], c->fold.nw)) return false;
  }
  MatvecFold f{};
  f.kind = kFoldNorm;
  f.nw = c->fold.nw;
  f.eps = c->fold.eps;
  FastArgs q = p;
  q.a = c->fold.x;
  return launch_fast_fold<kFoldNorm>(type, q, f, env.stream, env.sm_count);
}

// One pass of columns [c0, c0 + ncols) over n matrices of types[m], whose
// launch type is `type` (launch_type).
void fast_pass(const View* w, const View* d, int n, const uint32_t* types, uint32_t type,
               const View& a, int64_t c0, int ncols, const MatvecEnv& env) {
  FastArgs p = fast_args(w, d, n, types, a, c0, ncols, env);
  if (float_acts(type)) return launch_fast(type, p, env.stream);
  if (refold(d, n, type, p, env)) return;
  fast_acts(p, type, env);
  if (!launch_matvec_held(type, p, env.stream, env.sm_count)) launch_fast(type, p, env.stream);
}

}  // namespace

void launch_quantize_act(const View& a, int ncols, const ActQuantPtrs& q, cudaStream_t stream) {
  const int64_t warps = ncols * (a.ne[0] / 32);
  launch_pdl(quantize_act, static_cast<unsigned>((warps + 7) / 8), 256, 0, stream, a, ncols, q);
}

namespace {

size_t align256(size_t b) {
  return (b + 255) / 256 * 256;
}

// Bytes of a matrix-vector product's 8-bit activations in scratch.
size_t act_quant_bytes(int64_t k, int64_t cols) {
  const size_t codes = align256(static_cast<size_t>(cols * k));
  return 2 * codes + 2 * static_cast<size_t>(cols * (k / 32)) * sizeof(float);
}

// Bytes of a kMatvecNormQ product's blocks of its n rows and their Σ sum²,
// 256-aligned, after its own activations' (act_quant_bytes(k, 1)).
size_t norm_q_bytes(int64_t n) {
  return align256(act_quant_bytes(n, 1) + static_cast<size_t>(n / 32) * sizeof(float));
}

}  // namespace

ActQuantPtrs act_quant_at(uint8_t* scratch, int64_t k, int64_t ncols, bool residual) {
  const size_t codes = align256(static_cast<size_t>(ncols * k));
  float* ad = reinterpret_cast<float*>(scratch + 2 * codes);
  return {reinterpret_cast<int8_t*>(scratch),
          residual ? reinterpret_cast<int8_t*>(scratch + codes) : nullptr, ad,
          ad + ncols * (k / 32)};
}

size_t matvec_scratch(uint32_t type, int64_t k, int64_t ncols, int64_t batches, int64_t rows) {
  const int64_t wne[4] = {k, rows, 1, 1}, ane[4] = {k, ncols, batches, 1};
  if (!matvec_fast_path(type, wne, ane) || float_acts(type)) return 0;
  const int64_t cols = ncols < kMaxVecCols ? ncols : kMaxVecCols;
  const size_t own = act_quant_bytes(k, cols);
  // One column of at most kMaxNormQRows rows may be a kMatvecNormQ product.
  return ncols == 1 && rows <= kMaxNormQRows ? align256(own) + norm_q_bytes(rows) : own;
}

bool launch_matvec_norm_q(const View& w, const View& d, uint32_t type, const View& a,
                          const MatvecNormQ& e, const MatvecEnv& env) {
  const int64_t n = w.ne[1];
  if (float_acts(type) || env.cache == nullptr || n % 128 != 0 || n > kMaxNormQRows ||
      !matvec_fast_path(type, w.ne, a.ne) || a.ne[1] != 1)
    return false;
  // Its blocks go after its own activations' (matvec_scratch), which must
  // then start scratch, with no norm pending on them.
  const ActQuantCache& held = *env.cache;
  if (held.valid && (held.offset != 0 || held.norm.ssq != nullptr)) return false;
  FastArgs p = fast_args(&w, &d, 1, &type, a, 0, 1, env);
  fast_acts(p, type, env);
  const size_t at = align256(act_quant_bytes(w.ne[0], 1));
  const ActQuantPtrs q = act_quant_at(env.scratch + at, n, 1, false);
  p.epi = NormEpilogue{reinterpret_cast<const float*>(e.res.data),
                       reinterpret_cast<float*>(e.sum.data),
                       reinterpret_cast<const float*>(e.nw.data),
                       q,
                       q.as + n / 32,
                       e.counts};
  launch_fast(type, p, env.stream);
  ActQuantCache c{e.out.data, n, 1, e.out.nb[1], false, true};
  c.offset = at;
  c.norm = PendingNorm{p.epi.ssq,
                       e.eps,
                       p.epi.sum,
                       p.epi.nw,
                       reinterpret_cast<float*>(e.norm.data),
                       reinterpret_cast<float*>(e.out.data)};
  *env.cache = c;
  return true;
}

bool launch_matvec_fold(const View* w, const View* d, int n, const uint32_t* types, const View& a,
                        const MatvecFold& f, const MatvecEnv& env) {
  const uint32_t type = launch_type(types, n);
  if (type == kNoGroup) return false;
  FastArgs p = fast_args(w, d, n, types, a, 0, 1, env);
  const bool f16 = float_acts(type);
  // The folds read and write their vectors 16 bytes at a time, or not at all
  // (fusion.cpp checks the offsets; this, the buffers' own alignment).
  if (f.kind == kFoldNorm) {
    if (!p.act16 || !rows_aligned16(f.nw) || !rows_aligned16(f.norm) || !rows_aligned16(f.out))
      return false;
    return f16 ? launch_f16_direct<1, kFoldNorm>(p, env.stream, f)
               : launch_fast_fold<kFoldNorm>(type, p, f, env.stream, env.sm_count);
  }
  if (f16) return launch_f16_direct<1, kFoldAdd>(p, env.stream, f);
  if (env.scratch == nullptr) return false;
  fast_acts(p, type, env);
  return launch_fast_fold<kFoldAdd>(type, p, f, env.stream, 0);
}

void launch_matvec_group(const View* w, const View* d, int n, const uint32_t* types, const View& a,
                         MatvecEnv env) {
  const uint32_t type = launch_type(types, n);
  if (type == kNoGroup) {
    for (int m = 0; m < n; ++m) launch_matvec_group(&w[m], &d[m], 1, &types[m], a, env);
    return;
  }
  // Q4_K and Q6_K together take it where either type alone would.
  const bool fast =
      matvec_fast_path(types[0], w[0].ne, a.ne) && (float_acts(types[0]) || env.scratch);
  // One pass only: a second pass's quantized columns overwrite the first's.
  if (a.ne[1] > kMaxVecCols) env.cache = nullptr;
  for (int64_t c0 = 0; c0 < a.ne[1]; c0 += kMaxVecCols) {
    const int ncols = static_cast<int>(a.ne[1] - c0 < kMaxVecCols ? a.ne[1] - c0 : kMaxVecCols);
    if (fast) {
      fast_pass(w, d, n, types, type, a, c0, ncols, env);
      continue;
    }
    for (int m = 0; m < n; ++m) {
      View ac = a, dc = d[m];
      ac.data += c0 * a.nb[1];
      dc.data += c0 * d[m].nb[1];
      MatvecArgs p{w[m], ac, dc, types[m], ncols, a.ne[2] / w[m].ne[2], a.ne[3] / w[m].ne[3]};
      const dim3 grid(static_cast<unsigned>((w[m].ne[1] + kWarps - 1) / kWarps),
                      static_cast<unsigned>(a.ne[2] * a.ne[3]));
      launch_pdl(matvec_kernel, grid, kWarps * 32, 0, env.stream, p);
    }
  }
}

}  // namespace polyinfer::cuda
