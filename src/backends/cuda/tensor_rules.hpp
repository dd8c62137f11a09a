// Shape and type predicates over pi_tensors shared by the CUDA backend's op
// table and its fusion planner: plain host code with no CUDA header, so the
// planner builds (and is tested) without the CUDA toolkit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

// Shared shape predicates.
bool is_f32_rows(const pi_tensor& t);
bool same_shape(const pi_tensor& a, const pi_tensor& b);
bool present(const pi_tensor& t);
int64_t nrows(const pi_tensor& t);
size_t no_scratch(const pi_node& n);
// Block length and bytes per block of a weight type; {0, 0} for a type the
// backend cannot decode.
struct TypeSize {
  int block;
  int bytes;
};
TypeSize type_size(uint32_t type);
// Bytes that every row start of a tensor of this type is aligned to: the
// kernels read block fields with 2-byte (F16 scale) or 4-byte loads.
int type_alignment(uint32_t type);
bool rows_aligned(const pi_tensor& t);

// FLASH_ATTN's decode kernels (flash_decode.cu): whether they take a node of
// one token, at most 8 query heads per KV head and head size 32, 64, 128 or
// 256; up to kFlashShortKv positions one block per query head (no merge),
// past it one block per KV head and kFlashChunk positions.
constexpr int64_t kFlashShortKv = 256;
constexpr int kFlashChunk = 32;
constexpr int kFlashMaxGroup = 8;  // query heads per KV head
bool flash_decode_fits(int64_t tokens, int64_t group, int64_t head_dim);
// KV splits (blocks per head) for n_kv positions.
int flash_decode_splits(int64_t n_kv);
// Whether a FLASH_ATTN node takes the decode kernels.
bool flash_decode_node(const pi_node& n);

// Grid size for n items of `per_block` threads each, capped to what a 1-D
// grid allows (the kernels loop over the rest).
unsigned grid_for(int64_t n, int per_block);

}  // namespace polyinfer::cuda
