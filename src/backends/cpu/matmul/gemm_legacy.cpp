// GEMM of the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) against
// 32-element-block int8 activation rows, per Highway target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul/gemm_legacy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backends/cpu/matmul/kernel_entries.hpp"
#include "backends/cpu/matmul/quant_engine-inl.h"

HWY_BEFORE_NAMESPACE();
namespace polyinfer::cpu::HWY_NAMESPACE {

void GemmQ4_0(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ4_0>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmQ4_1(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ4_1>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmQ5_0(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ5_0>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmQ5_1(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ5_1>(k, w, ws, n, a, as, m, dst, ds);
}
void GemmQ8_0(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
              float* dst, size_t ds) {
  GemmQuant<WeightQ8_0>(k, w, ws, n, a, as, m, dst, ds);
}

}  // namespace polyinfer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace polyinfer::cpu {

HWY_EXPORT(GemmQ4_0);
HWY_EXPORT(GemmQ4_1);
HWY_EXPORT(GemmQ5_0);
HWY_EXPORT(GemmQ5_1);
HWY_EXPORT(GemmQ8_0);

void gemm_q4_0(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ4_0)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_q4_1(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ4_1)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_q5_0(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ5_0)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_q5_1(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ5_1)(k, w, ws, n, a, as, m, dst, ds);
}
void gemm_q8_0(int64_t k, const void* w, size_t ws, int64_t n, const void* a, size_t as, int64_t m,
               float* dst, size_t ds) {
  HWY_DYNAMIC_DISPATCH(GemmQ8_0)(k, w, ws, n, a, as, m, dst, ds);
}

}  // namespace polyinfer::cpu
#endif  // HWY_ONCE
