// Unaligned block access for the quant kernels. Rows in GGUF files need not be
// aligned to a block's alignment, so blocks are copied through memcpy (which
// compilers turn into plain loads and stores) instead of being cast in place.
#pragma once

#include <cstdint>
#include <cstring>

namespace polyinfer::quant {

template <typename Block>
Block load_block(const void* src, int64_t index) {
  Block b;
  std::memcpy(&b, static_cast<const uint8_t*>(src) + index * sizeof(Block), sizeof(Block));
  return b;
}

template <typename Block>
void store_block(void* dst, int64_t index, const Block& b) {
  std::memcpy(static_cast<uint8_t*>(dst) + index * sizeof(Block), &b, sizeof(Block));
}

}  // namespace polyinfer::quant
