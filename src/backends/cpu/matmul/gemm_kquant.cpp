// GEMM of the K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) against
// 256-element-block int8 activation rows, per Highway target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul/gemm_kquant.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backends/cpu/matmul/kernel_entries.hpp"
#include "backends/cpu/matmul/quant_engine-inl.h"

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {

void GemmQ2_K(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ2_K>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmQ3_K(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ3_K>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmQ4_K(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ4_K>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmQ5_K(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ5_K>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmQ6_K(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ6_K>(k, w, ws, n, a, as, m, dst, ds);
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {

HWY_EXPORT(GemmQ2_K);
HWY_EXPORT(GemmQ3_K);
HWY_EXPORT(GemmQ4_K);
HWY_EXPORT(GemmQ5_K);
HWY_EXPORT(GemmQ6_K);

void gemm_q2_k(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ2_K)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_q3_k(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ3_K)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_q4_k(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ4_K)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_q5_k(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ5_K)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_q6_k(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ6_K)(k, w, ws, n, a, as, m, dst, ds);
}

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
