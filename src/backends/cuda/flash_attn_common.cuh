// What the FLASH_ATTN kernels share: their arguments, reading one K/V
// element of any cache type, and the merge of flash-decoding partials.
#pragma once

#include "backends/cuda/act_quant.cuh"
#include "backends/cuda/cuda_common.cuh"
#include "backends/cuda/decode_fields.hpp"

namespace polyinfer::cuda {

constexpr int kMaxD = 256;

struct FaArgs {
  View q, k, v, mask, o;
  uint32_t kt, vt;
  float scale;
  int64_t group;  // query heads per KV head
  int nsplit;
  float* partial;  // nsplit > 1: [rows][nsplit][D + 2] (max, sum, unnormalized output)
  // aq != nullptr: the short decode kernel also writes its one token's output
  // (heads one after another) as 8-bit blocks for the O projection.
  ActQuantPtrs quant;
  // Decode kernels: the node's AttnField values in device memory
  // (decode_fields.hpp): n_kv, which then stands for k.ne[1], v.ne[1] and the
  // mask's length, and what may be read before the PDL wait. nullptr: n_kv is
  // k.ne[1] and nothing is read early. The host uploads these values before
  // the graph's first kernel, so they too may be read before the wait.
  const int64_t* n_kv_field = nullptr;
};

__device__ __forceinline__ int64_t kv_length(const FaArgs& p) {
  return p.n_kv_field ? p.n_kv_field[kAttnKvLength] : p.k.ne[1];
}

// The leading KV positions whose rows may be read before the PDL wait.
__device__ __forceinline__ int64_t kv_early(const FaArgs& p) {
  return p.n_kv_field ? p.n_kv_field[kAttnKvEarly] : 0;
}

// Whether the mask may be read before the PDL wait.
__device__ __forceinline__ bool mask_early(const FaArgs& p) {
  return p.n_kv_field && p.n_kv_field[kAttnMaskEarly] != 0;
}

__device__ __forceinline__ float kv_elem(uint32_t type, const uint8_t* row, int d) {
  if (type == kF32) return reinterpret_cast<const float*>(row)[d];
  if (type == kF16) return f16_bits_to_f32(reinterpret_cast<const uint16_t*>(row)[d]);
  const uint8_t* b = row + (d / 32) * 34;
  return f16_bits_to_f32(*reinterpret_cast<const uint16_t*>(b)) *
         static_cast<float>(static_cast<int8_t>(b[2 + d % 32]));
}

// Merges the nsplit partial results of each (token, head) row: one block per
// row (ops_flash_attn.cu).
__global__ void fa_merge(FaArgs p);

}  // namespace polyinfer::cuda
