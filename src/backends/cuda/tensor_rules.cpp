// Shape predicates and type tables shared by the op implementations.
#include "backends/cuda/tensor_rules.hpp"

#include <algorithm>

namespace polyinfer::cuda {

bool is_f32_rows(const pi_tensor& t) {
  return t.type == 0 && t.nb[0] == 4 && t.nb[1] % 4 == 0 && t.nb[2] % 4 == 0 && t.nb[3] % 4 == 0 &&
         t.offset % 4 == 0;
}

bool same_shape(const pi_tensor& a, const pi_tensor& b) {
  return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

bool present(const pi_tensor& t) {
  return t.buffer != nullptr;
}

int64_t nrows(const pi_tensor& t) {
  return t.ne[1] * t.ne[2] * t.ne[3];
}

size_t no_scratch(const pi_node&) {
  return 0;
}

TypeSize type_size(uint32_t type) {
  switch (type) {
    case 0:
      return {1, 4};
    case 1:
      return {1, 2};
    case 30:
      return {1, 2};
    case 2:
      return {32, 18};
    case 3:
      return {32, 20};
    case 6:
      return {32, 22};
    case 7:
      return {32, 24};
    case 8:
      return {32, 34};
    case 10:
      return {256, 84};
    case 11:
      return {256, 110};
    case 12:
      return {256, 144};
    case 13:
      return {256, 176};
    case 14:
      return {256, 210};
    default:
      return {0, 0};
  }
}

int type_alignment(uint32_t type) {
  return type == 0 ? 4 : 2;
}

bool rows_aligned(const pi_tensor& t) {
  const uint64_t a = static_cast<uint64_t>(type_alignment(t.type));
  return t.offset % a == 0 && t.nb[1] % a == 0 && t.nb[2] % a == 0 && t.nb[3] % a == 0;
}

unsigned grid_for(int64_t n, int per_block) {
  const int64_t blocks = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 1 << 30));
}

bool flash_decode_fits(int64_t tokens, int64_t group, int64_t head_dim) {
  return tokens == 1 && group >= 1 && group <= kFlashMaxGroup &&
         (head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256);
}

int flash_decode_splits(int64_t n_kv) {
  if (n_kv <= kFlashShortKv) return 1;  // the short kernel: no merge
  return static_cast<int>((n_kv + kFlashChunk - 1) / kFlashChunk);
}

bool flash_decode_node(const pi_node& n) {
  return n.op == PI_OP_FLASH_ATTN && n.src[1].ne[2] > 0 &&
         flash_decode_fits(n.src[0].ne[1], n.src[0].ne[2] / n.src[1].ne[2], n.src[0].ne[0]);
}

}  // namespace polyinfer::cuda
