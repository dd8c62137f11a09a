// A tensor as the conformance tests hold it on the host: its layout in ggml
// order (ne elements, nb byte strides) and the bytes of the whole buffer it
// lives in. A view may start at an offset and leave gaps between rows; those
// bytes are part of `bytes` too, so a test can check that a backend left them
// alone.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "polyinfer/dtype.hpp"

namespace polyinfer::conformance {

using Shape = std::array<int64_t, 4>;
using Strides = std::array<uint64_t, 4>;

struct HostTensor {
  GgmlType type;
  Shape ne;
  Strides nb;
  uint64_t offset;  // byte offset of element (0,0,0,0) in bytes
  std::vector<uint8_t> bytes;

  int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
  uint8_t* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0);
  const uint8_t* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const;
  // Row (i1, i2, i3) decoded to float64 (through polyinfer::dequantize_row for
  // block types, which is bit-exact with gguf-py).
  std::vector<double> row_values(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const;
  // Every element in ggml order (i0 fastest), decoded as row_values.
  std::vector<double> values() const;

  // Element access for F32 and I32 tensors.
  float& f32(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0);
  float f32(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const;
  int32_t& i32(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0);
};

// Bytes of poison in front of element 0 of every contiguous tensor, so that a
// backend that ignores pi_tensor::offset reads or writes the wrong bytes.
inline constexpr uint64_t kLeadBytes = 96;

// Rows of `type` packed one after the other (nb[0] = bytes per block), after
// kLeadBytes. ne[0] must be a multiple of the type's block size.
HostTensor contiguous(GgmlType type, const Shape& ne);
// A view with explicit strides into a buffer of `size` bytes.
HostTensor strided(GgmlType type, const Shape& ne, const Strides& nb, uint64_t offset,
                   uint64_t size);

// Every byte 0xFF: a NaN in each F32/F16/BF16 element and in each block scale,
// -1 in each I32 element. Applied to outputs before a run.
void poison(HostTensor& t);
// Bytes of t.bytes that no element of the view covers and that no longer hold
// the poison (a backend wrote outside its destination view).
int64_t count_written_outside_view(const HostTensor& t);

}  // namespace polyinfer::conformance
