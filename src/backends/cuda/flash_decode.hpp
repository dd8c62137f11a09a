// FLASH_ATTN for one query token (decode). Up to 256 KV positions (every
// step of a tg128 run): a block per query head, one round trip of loads per
// 128 positions, no merge. Longer, GQA-aware: one block per
// (KV head, 32 KV positions) computes the scores of all the query heads that
// share the KV head, four threads per position, then P·V with the threads
// over the head dimension; a merge kernel combines the blocks of a head. Each
// K and V row is read once per step, not once per query head, and no thread
// walks more than 32 positions (the general kernel's warps walk theirs one by
// one, which cost 30-70 us per layer at n_kv = 128 on the H200).
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/flash_attn_common.cuh"
#include "backends/cuda/tensor_rules.hpp"

namespace polyinfer::cuda {

// Which nodes take the kernels: flash_decode_fits, flash_decode_splits
// (tensor_rules.hpp). Enqueues the kernel (and the merge when p.nsplit > 1); p.nsplit must be
// flash_decode_splits(n_kv). p.quant is written only when p.nsplit == 1.
void launch_flash_decode(const FaArgs& p, cudaStream_t stream);

}  // namespace polyinfer::cuda
