// FLASH_ATTN for prompts (T > 1) with K and V in F16 and D = 32, 64 or 128:
// tensor-core tiles (mma.sync m16n8k16, F16 inputs, float32 accumulation).
// A block of 4 warps takes 64 query tokens of one head, each warp 16 of them;
// K/V tiles of 64 positions are copied into shared memory with cp.async, two
// stages (the next tile in flight while the current one is used), and read
// as MMA fragments with ldmatrix (V transposed by ldmatrix.trans). A tile
// that the mask hides from all 64 tokens is skipped: a first kernel marks
// each (64 tokens, 64 positions) tile of the mask live or not, once per node.
// q is rounded to F16 for Q·Kᵀ and p to F16 once for P·V (docs/OPS.md allows
// both); the online softmax (Milakov & Gimelshein 2018; Dao et al. 2022,
// FlashAttention) stays in float32.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "backends/cuda/flash_attn_common.cuh"
#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

// The node's shapes and types take the tiles (T > 1, F16 K/V whose views
// are 16-byte aligned, D = 32, 64 or 128).
bool flash_prefill_node(const pi_node& n);

// Scratch bytes of the launch: the tile liveness map when a mask is present.
size_t flash_prefill_scratch(const pi_node& n);

// Enqueues the kernels for a node that flash_prefill_node accepts; false
// (nothing enqueued) when a view's device address is not 16-byte aligned.
bool launch_flash_prefill(const FaArgs& p, uint8_t* scratch, cudaStream_t stream);

}  // namespace polyinfer::cuda
