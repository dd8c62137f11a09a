#include "backends/cuda/matvec_path.hpp"

namespace polyinfer::cuda {
namespace {

// GGUF type ids (cuda_common.cuh has them for device code, which a host .cpp
// cannot include).
constexpr uint32_t kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14;

bool fast_type(uint32_t t) {
  return t == kQ4_0 || t == kQ4_K || t == kQ5_K || t == kQ6_K || t == kF16 || t == kQ8_0;
}

}  // namespace

bool matvec_fast_path(uint32_t type, const int64_t* wne, const int64_t* ane) {
  return fast_type(type) && ane[2] * ane[3] == 1 && wne[2] * wne[3] == 1 && wne[0] % 32 == 0;
}

bool matvec_types_group(uint32_t a, uint32_t b) {
  const auto kquant = [](uint32_t t) { return t == kQ4_K || t == kQ6_K; };
  return a == b || (kquant(a) && kquant(b));
}

bool takes_matvec(const pi_node& n) {
  return n.src[1].ne[1] <= kMaxVecCols;
}

bool matvec_quantizes(const pi_node& n) {
  const uint32_t t = n.src[0].type;
  return takes_matvec(n) && t != kF16 && matvec_fast_path(t, n.src[0].ne, n.src[1].ne);
}

bool matvec_residual(const pi_node& n) {
  return matvec_quantizes(n) && n.src[0].type == kQ8_0;
}

}  // namespace polyinfer::cuda
