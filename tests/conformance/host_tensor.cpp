#include "host_tensor.hpp"

#include <cstring>

#include "polyinfer/quant.hpp"

namespace polyinfer::conformance {

uint8_t* HostTensor::row(int64_t i1, int64_t i2, int64_t i3) {
  return bytes.data() + offset + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
}

const uint8_t* HostTensor::row(int64_t i1, int64_t i2, int64_t i3) const {
  return bytes.data() + offset + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
}

std::vector<double> HostTensor::row_values(int64_t i1, int64_t i2, int64_t i3) const {
  std::vector<float> f(static_cast<size_t>(ne[0]));
  dequantize_row(type, row(i1, i2, i3), f.data(), ne[0]);
  return {f.begin(), f.end()};
}

std::vector<double> HostTensor::values() const {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(elements()));
  for (int64_t i3 = 0; i3 < ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < ne[1]; ++i1) {
        const std::vector<double> r = row_values(i1, i2, i3);
        out.insert(out.end(), r.begin(), r.end());
      }
    }
  }
  return out;
}

float& HostTensor::f32(int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return *reinterpret_cast<float*>(row(i1, i2, i3) + i0 * nb[0]);
}

float HostTensor::f32(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
  float v;
  std::memcpy(&v, row(i1, i2, i3) + i0 * nb[0], 4);
  return v;
}

int32_t& HostTensor::i32(int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return *reinterpret_cast<int32_t*>(row(i1, i2, i3) + i0 * nb[0]);
}

HostTensor contiguous(GgmlType type, const Shape& ne) {
  const uint64_t row = row_size(type, ne[0]);
  const Strides nb{traits(type).type_size, row, row * ne[1], row * ne[1] * ne[2]};
  return strided(type, ne, nb, kLeadBytes, kLeadBytes + nb[3] * ne[3]);
}

HostTensor strided(GgmlType type, const Shape& ne, const Strides& nb, uint64_t offset,
                   uint64_t size) {
  HostTensor t{type, ne, nb, offset, std::vector<uint8_t>(size)};
  poison(t);
  return t;
}

void poison(HostTensor& t) {
  std::memset(t.bytes.data(), 0xFF, t.bytes.size());
}

int64_t count_written_outside_view(const HostTensor& t) {
  std::vector<bool> covered(t.bytes.size(), false);
  const uint64_t row = row_size(t.type, t.ne[0]);
  for (int64_t i3 = 0; i3 < t.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < t.ne[2]; ++i2) {
      for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
        const size_t start = static_cast<size_t>(t.row(i1, i2, i3) - t.bytes.data());
        for (size_t b = start; b < start + row; ++b) covered[b] = true;
      }
    }
  }
  int64_t written = 0;
  for (size_t b = 0; b < t.bytes.size(); ++b) written += !covered[b] && t.bytes[b] != 0xFF;
  return written;
}

}  // namespace polyinfer::conformance
