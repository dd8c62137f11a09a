// A pi_tensor resolved to a device address: what the host code hands to the
// kernels. Passed by value, so a launch needs no device-side descriptor and a
// captured CUDA graph holds the whole argument.
#pragma once

#include <cstdint>

namespace polyinfer::cuda {

struct View {
  uint8_t* data;  // element (0,0,0,0); nullptr for an absent optional source
  int64_t ne[4];
  int64_t nb[4];
};

// Every row of the view starts `bytes`-aligned (its address and nb[1..3]),
// so that kernels may read and write it in pieces of that size.
inline bool rows_aligned(const View& v, uint64_t bytes) {
  return reinterpret_cast<uintptr_t>(v.data) % bytes == 0 && v.nb[1] % bytes == 0 &&
         v.nb[2] % bytes == 0 && v.nb[3] % bytes == 0;
}

inline bool rows_aligned16(const View& v) {
  return rows_aligned(v, 16);
}

// An absent optional view (data == nullptr), or rows_aligned16.
inline bool absent_or_aligned16(const View& v) {
  return v.data == nullptr || rows_aligned16(v);
}

// Whether two views may share bytes (bounds from the strides; the last
// element counted as 4 bytes when nb[0] is smaller, as for block types).
inline bool views_overlap(const View& a, const View& b) {
  if (a.data == nullptr || b.data == nullptr) return false;
  const auto range = [](const View& v, uintptr_t* lo, uintptr_t* hi) {
    *lo = reinterpret_cast<uintptr_t>(v.data);
    *hi = *lo + static_cast<uintptr_t>(v.nb[0] > 4 ? v.nb[0] : 4);
    for (int d = 0; d < 4; ++d) *hi += static_cast<uintptr_t>((v.ne[d] - 1) * v.nb[d]);
  };
  uintptr_t a0, a1, b0, b1;
  range(a, &a0, &a1);
  range(b, &b0, &b1);
  return a0 < b1 && b0 < a1;
}

}  // namespace polyinfer::cuda
