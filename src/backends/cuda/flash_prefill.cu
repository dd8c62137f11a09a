// FLASH_ATTN prefill on tensor cores (flash_prefill.hpp).
#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include <atomic>

#include "backends/cuda/flash_prefill.hpp"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/tensor_rules.hpp"

namespace polyinfer::cuda {
namespace {

constexpr int kTq = 64, kTk = 64, kWarps = 4, kThreads = kWarps * 32;
constexpr int kMaxDevices = 64;

// Shared-memory bytes of a block: two stages of K and V tiles (rows padded by
// 8 halves so that ldmatrix's eight row addresses hit distinct banks), then
// the block's row of the liveness map.
template <int D>
constexpr size_t kTileBytes = static_cast<size_t>(kTk) * (D + 8) * 2;
template <int D>
size_t smem_bytes(int64_t kv_tiles) {
  return 4 * kTileBytes<D> + static_cast<size_t>((kv_tiles + 15) / 16 * 16);
}

int64_t tiles(int64_t n, int64_t per) {
  return (n + per - 1) / per;
}

// What a (64 tokens, 64 positions) tile of the mask holds: no position any
// token sees (every value −inf: the tile is skipped), values to add, or only
// zeros (the tile is used without reading the mask: a causal prompt's tiles
// below the diagonal).
enum TileMask : uint8_t { kTileDead = 0, kTileMasked = 1, kTileOpen = 2 };

__device__ __forceinline__ void classify(float m, bool& any, bool& nonzero) {
  any |= m != -INFINITY;
  nonzero |= m != 0.0f;
}

// live[qt * kv_tiles + kt], a TileMask. Block (kt, qt), 256 threads, 16
// values each: four 16-byte loads where the mask's rows allow (vec4: rows
// 16-byte aligned, n_kv % 4 == 0), else 16 independent ones.
__global__ void tile_live_kernel(View mask, int64_t T, int64_t n_kv, int64_t kv_tiles, bool vec4,
                                 uint8_t* live) {
  pdl_start();
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTq,
                j0 = static_cast<int64_t>(blockIdx.x) * kTk;
  bool any = false, nonzero = false;
  if (vec4) {
#pragma unroll
    for (int i = 4 * threadIdx.x; i < kTq * kTk; i += 4 * 256) {
      const int64_t t = t0 + i / kTk, j = j0 + i % kTk;
      if (t < T && j < n_kv) {
        const float4 m = *reinterpret_cast<const float4*>(mask.data + t * mask.nb[1] + 4 * j);
        for (const float v : {m.x, m.y, m.z, m.w}) classify(v, any, nonzero);
      }
    }
  } else {
#pragma unroll
    for (int i = threadIdx.x; i < kTq * kTk; i += 256) {
      const int64_t t = t0 + i / kTk, j = j0 + i % kTk;
      if (t < T && j < n_kv)
        classify(reinterpret_cast<const float*>(mask.data + t * mask.nb[1])[j], any, nonzero);
    }
  }
  any = __syncthreads_or(any);
  nonzero = __syncthreads_or(nonzero);
  if (threadIdx.x == 0)
    live[blockIdx.y * kv_tiles + blockIdx.x] = !any ? kTileDead : nonzero ? kTileMasked : kTileOpen;
}

__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 matrices of 16-bit values from shared memory; lane l gives row
// l % 8 of matrix l / 8. trans: each lane receives a column pair instead.
template <bool kTrans>
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const uint16_t* row) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(row));
  if constexpr (kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
  }
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// Starts the copies of KV positions [j0, j0 + kTk) of K and V into a stage;
// rows past n_kv are zero-filled (a zero V row times p = 0 stays 0).
template <int D>
__device__ __forceinline__ void load_tile(const uint8_t* kb, const uint8_t* vb, uint64_t knb,
                                          uint64_t vnb, int64_t j0, int64_t n_kv, uint16_t* sk,
                                          uint16_t* sv) {
  constexpr int kChunks = D / 8, kS = D + 8;  // 16-byte pieces per row; row stride (halves)
  for (int i = threadIdx.x; i < kTk * kChunks; i += kThreads) {
    const int jj = i / kChunks, c = i % kChunks;
    const int64_t j = j0 + jj;
    const bool in = j < n_kv;
    const int64_t jr = in ? j : 0;
    __pipeline_memcpy_async(sk + jj * kS + 8 * c, kb + jr * knb + 16 * c, 16, in ? 0 : 16);
    __pipeline_memcpy_async(sv + jj * kS + 8 * c, vb + jr * vnb + 16 * c, 16, in ? 0 : 16);
  }
}

// The first live KV tile at or after kt (kv_tiles when none).
__device__ __forceinline__ int64_t next_live(const uint8_t* live, int64_t kt, int64_t kv_tiles) {
  while (kt < kv_tiles && live != nullptr && live[kt] == kTileDead) ++kt;
  return kt;
}

template <int D>
__global__ __launch_bounds__(kThreads) void fa_prefill_kernel(FaArgs p, const uint8_t* live_map,
                                                              int64_t kv_tiles) {
  pdl_start();
  constexpr int kS = D + 8;
  extern __shared__ __align__(16) uint8_t smem[];
  uint16_t* sk = reinterpret_cast<uint16_t*>(smem);  // [2][kTk][kS]
  uint16_t* sv = sk + 2 * kTk * kS;                  // [2][kTk][kS]
  uint8_t* live = live_map ? smem + 4 * kTileBytes<D> : nullptr;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, tq = lane % 4;
  const int64_t T = p.q.ne[1], n_kv = p.k.ne[1];
  const int64_t h = blockIdx.y, hk = h / p.group;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * kTq;
  const int64_t r0 = t0 + warp * 16 + g, r1 = r0 + 8;  // this lane's two query rows
  if (live) {
    for (int64_t i = threadIdx.x; i < kv_tiles; i += kThreads)
      live[i] = live_map[blockIdx.x * kv_tiles + i];
    __syncthreads();
  }
  const uint8_t* kb = p.k.data + hk * p.k.nb[2];
  const uint8_t* vb = p.v.data + hk * p.v.nb[2];
  int64_t kt = next_live(live, 0, kv_tiles);
  if (kt < kv_tiles) load_tile<D>(kb, vb, p.k.nb[1], p.v.nb[1], kt * kTk, n_kv, sk, sv);
  __pipeline_commit();

  // Q fragments (A operand, row major): rows g and g + 8, columns 2tq, 2tq + 1 (+ 8).
  uint32_t qf[D / 16][4];
  {
    const float* q0 = r0 < T ? reinterpret_cast<const float*>(row_at(p.q, r0, h, 0)) : nullptr;
    const float* q1 = r1 < T ? reinterpret_cast<const float*>(row_at(p.q, r1, h, 0)) : nullptr;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const int c = kk * 16 + 2 * tq;
      qf[kk][0] = q0 ? pack_half2(q0[c], q0[c + 1]) : 0u;
      qf[kk][1] = q1 ? pack_half2(q1[c], q1[c + 1]) : 0u;
      qf[kk][2] = q0 ? pack_half2(q0[c + 8], q0[c + 9]) : 0u;
      qf[kk][3] = q1 ? pack_half2(q1[c + 8], q1[c + 9]) : 0u;
    }
  }
  const float* m0 = p.mask.data && r0 < T
                        ? reinterpret_cast<const float*>(p.mask.data + r0 * p.mask.nb[1])
                        : nullptr;
  const float* m1 = p.mask.data && r1 < T
                        ? reinterpret_cast<const float*>(p.mask.data + r1 * p.mask.nb[1])
                        : nullptr;
  float o[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  float mx0 = -INFINITY, mx1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
  int stage = 0;

  while (kt < kv_tiles) {
    const int64_t next = next_live(live, kt + 1, kv_tiles);
    if (next < kv_tiles) {
      const int o1 = (stage ^ 1) * kTk * kS;
      load_tile<D>(kb, vb, p.k.nb[1], p.v.nb[1], next * kTk, n_kv, sk + o1, sv + o1);
    }
    __pipeline_commit();
    __pipeline_wait_prior(1);  // this tile's copies (the next tile's may still fly)
    __syncthreads();
    const uint16_t* ks = sk + stage * kTk * kS;
    const uint16_t* vs = sv + stage * kTk * kS;
    const int64_t j0 = kt * kTk;
    const bool masked = live == nullptr || live[kt] == kTileMasked;

    // S = Q·Kᵀ for 16 rows × 64 positions: 8 tiles of 8 columns; one
    // ldmatrix.x4 gives the B fragments of two 16-wide steps over D.
    float s[kTk / 8][4];
#pragma unroll
    for (int nt = 0; nt < kTk / 8; ++nt) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < D / 16; kk += 2) {
        uint32_t b[4];
        ldmatrix_x4<false>(b, ks + (nt * 8 + lane % 8) * kS + kk * 16 + (lane / 8) * 8);
        mma16816(s[nt], qf[kk], b[0], b[1]);
        mma16816(s[nt], qf[kk + 1], b[2], b[3]);
      }
    }
    // Scale, mask, running max.
    float tmax0 = -INFINITY, tmax1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kTk / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t j = j0 + nt * 8 + 2 * tq + e;
        float a = s[nt][e] * p.scale, b = s[nt][2 + e] * p.scale;
        if (j >= n_kv) {
          a = b = -INFINITY;
        } else if (masked) {
          if (m0) a += m0[j];
          if (m1) b += m1[j];
        }
        s[nt][e] = a;
        s[nt][2 + e] = b;
        tmax0 = fmaxf(tmax0, a);
        tmax1 = fmaxf(tmax1, b);
      }
    }
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      tmax0 = fmaxf(tmax0, __shfl_xor_sync(0xffffffffu, tmax0, off));
      tmax1 = fmaxf(tmax1, __shfl_xor_sync(0xffffffffu, tmax1, off));
    }
    const float new0 = fmaxf(mx0, tmax0), new1 = fmaxf(mx1, tmax1);
    const float c0 = new0 == -INFINITY ? 1.0f : expf(mx0 - new0);
    const float c1 = new1 == -INFINITY ? 1.0f : expf(mx1 - new1);
    mx0 = new0;
    mx1 = new1;
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int nt = 0; nt < kTk / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float a = new0 == -INFINITY ? 0.0f : expf(s[nt][e] - new0);
        const float b = new1 == -INFINITY ? 0.0f : expf(s[nt][2 + e] - new1);
        s[nt][e] = a;
        s[nt][2 + e] = b;
        sum0 += a;
        sum1 += b;
      }
    }
    l0 = l0 * c0 + sum0;
    l1 = l1 * c1 + sum1;
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      o[i][0] *= c0;
      o[i][1] *= c0;
      o[i][2] *= c1;
      o[i][3] *= c1;
    }
    // O += P·V: P's accumulator layout is the A operand's layout; one
    // ldmatrix.x4.trans gives the B fragments of two 8-wide tiles of D.
#pragma unroll
    for (int kk = 0; kk < kTk / 16; ++kk) {
      const uint32_t a[4] = {pack_half2(s[2 * kk][0], s[2 * kk][1]),
                             pack_half2(s[2 * kk][2], s[2 * kk][3]),
                             pack_half2(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack_half2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dt = 0; dt < D / 8; dt += 2) {
        uint32_t b[4];
        ldmatrix_x4<true>(
            b, vs + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * kS + (dt + lane / 16) * 8);
        mma16816(o[dt], a, b[0], b[1]);
        mma16816(o[dt + 1], a, b[2], b[3]);
      }
    }
    __syncthreads();  // the stage is read before the next-but-one tile lands in it
    kt = next;
    stage ^= 1;
  }
#pragma unroll
  for (int off = 1; off < 4; off <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, off);
    l1 += __shfl_xor_sync(0xffffffffu, l1, off);
  }
  const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
  float* out0 = r0 < T ? reinterpret_cast<float*>(row_at(p.o, h, r0, 0)) : nullptr;
  float* out1 = r1 < T ? reinterpret_cast<float*>(row_at(p.o, h, r1, 0)) : nullptr;
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    const int c = dt * 8 + 2 * tq;
    if (out0) {
      out0[c] = o[dt][0] * inv0;
      out0[c + 1] = o[dt][1] * inv0;
    }
    if (out1) {
      out1[c] = o[dt][2] * inv1;
      out1[c + 1] = o[dt][3] * inv1;
    }
  }
}

bool aligned16(const pi_tensor& t) {
  return t.offset % 16 == 0 && t.nb[1] % 16 == 0 && t.nb[2] % 16 == 0;
}

// Raises the kernel's dynamic shared-memory limit past the default 48 KB,
// once per device (the attribute is per device context).
template <int D>
bool allow_smem(size_t bytes) {
  static std::atomic<size_t> allowed[kMaxDevices];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return false;
  if (allowed[dev].load(std::memory_order_relaxed) >= bytes) return true;
  if (cudaFuncSetAttribute(fa_prefill_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes)) != cudaSuccess) {
    return false;
  }
  allowed[dev].store(bytes, std::memory_order_relaxed);
  return true;
}

template <int D>
bool launch_d(const FaArgs& p, const uint8_t* live, int64_t kv_tiles, cudaStream_t stream) {
  const size_t bytes = smem_bytes<D>(live ? kv_tiles : 0);
  const dim3 grid(static_cast<unsigned>(tiles(p.q.ne[1], kTq)), static_cast<unsigned>(p.q.ne[2]));
  // (__launch_bounds__ for three blocks per multiprocessor instead of two
  // spilled and gained nothing, session 13.)
  if (!allow_smem<D>(bytes)) return false;
  launch_pdl(fa_prefill_kernel<D>, grid, kThreads, bytes, stream, p, live, kv_tiles);
  return true;
}

bool address_aligned16(const View& v) {
  return reinterpret_cast<uintptr_t>(v.data) % 16 == 0;
}

}  // namespace

bool flash_prefill_node(const pi_node& n) {
  const int64_t d = n.src[0].ne[0];
  return n.src[0].ne[1] > 1 && n.src[1].type == kF16 && n.src[2].type == kF16 &&
         aligned16(n.src[1]) && aligned16(n.src[2]) && (d == 32 || d == 64 || d == 128) &&
         n.src[0].ne[2] <= 65535;
}

size_t flash_prefill_scratch(const pi_node& n) {
  if (!present(n.src[3])) return 0;
  return static_cast<size_t>(tiles(n.src[0].ne[1], kTq) * tiles(n.src[1].ne[1], kTk));
}

bool launch_flash_prefill(const FaArgs& p, uint8_t* scratch, cudaStream_t stream) {
  if (!address_aligned16(p.k) || !address_aligned16(p.v)) return false;
  const int64_t T = p.q.ne[1], n_kv = p.k.ne[1], kv_tiles = tiles(n_kv, kTk);
  // The map lives in the block's shared memory: bound it well under 227 KB.
  if (kv_tiles > 64 * 1024) return false;
  uint8_t* live = p.mask.data ? scratch : nullptr;
  if (live) {
    const dim3 grid(static_cast<unsigned>(kv_tiles), static_cast<unsigned>(tiles(T, kTq)));
    const bool vec4 = n_kv % 4 == 0 && reinterpret_cast<uintptr_t>(p.mask.data) % 16 == 0 &&
                      p.mask.nb[1] % 16 == 0;
    launch_pdl(tile_live_kernel, grid, 256, 0, stream, p.mask, T, n_kv, kv_tiles, vec4, live);
  }
  switch (p.q.ne[0]) {
    case 32:
      return launch_d<32>(p, live, kv_tiles, stream);
    case 64:
      return launch_d<64>(p, live, kv_tiles, stream);
    default:
      return launch_d<128>(p, live, kv_tiles, stream);
  }
}

}  // namespace polyinfer::cuda
