#include "tolerances.hpp"

#include <algorithm>
#include <cmath>

namespace polyinfer::conformance {
namespace {

constexpr double kF16Rel = 0x1p-11;    // F16 round to nearest: half an ulp, relative
constexpr double kBF16Rel = 0x1p-8;    // BF16 likewise
constexpr double kQ8Step = 1.0 / 127;  // 8-bit blocks: d = amax / 127

// Kept in the order of docs/OPS.md's tolerance table.
constexpr ToleranceRow kTable[] = {
    {"GET_ROWS", "F32, F16, BF16", "0", "a plain conversion is exact"},
    {"GET_ROWS", "Q4_0 ... Q6_K", "8u·max abs(x) over the block",
     "d·q + m may be rounded once (fused multiply-add) or twice: 2u·(abs(d·q) + abs(m)) "
     "<= 6u·max abs(x)"},
    {"RMS_NORM", "F32", "(K/2 + 6)·u·abs(want)",
     "a sum of K squares (positive terms) in any order is within (K-1)·u relative, halved by "
     "the square root; mean, eps, sqrt, divide and the scaling add <= 5u"},
    {"NORM", "F32", "(3K/2 + 8)·u·(abs(x) + mean abs(x))·s, s = 1/sqrt(var + eps)",
     "the mean is within K·u·mean abs(x); the variance (positive terms) within (K-1)·u "
     "relative, halved by the square root; a few roundings more"},
    {"MUL_MAT", "F32", "K·u·Σ abs(w·a)", "a float32 dot product of K terms in any order"},
    {"MUL_MAT", "F16", "(2^-11 + K·u)·Σ abs(w·a)",
     "activations may be rounded to F16 for the dot product (as ggml's vec_dot_f16)"},
    {"MUL_MAT", "BF16", "(2^-8 + K·u)·Σ abs(w·a)",
     "activations may be rounded to BF16 for the dot product"},
    {"MUL_MAT", "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0",
     "Σ abs(w_i)·amax32(a)/127 + K·u·Σ abs(w·a), amax32 over the 32-block of a holding i",
     "activations may be quantized to 8-bit blocks of 32 (Q8_0/Q8_1, d = amax/127 stored as "
     "F16): each moves by <= d/2 + 127·d·2^-11 < amax/127"},
    {"MUL_MAT", "Q2_K ... Q6_K",
     "Σ abs(w_i)·amax256(a)/127 + K·u·Σ abs(w·a), amax256 over the 256-block of a holding i",
     "activations may be quantized to Q8_K blocks of 256 (d = amax/127 in float32): each moves "
     "by <= amax/254"},
    {"ADD, MUL, SCALE", "F32", "u·abs(want)", "one float32 rounding of an exact result"},
    {"ROPE", "F32", "mscale·(abs(x_a) + abs(x_b))·((4i + 8)·u·abs(θ_i) + 8u)",
     "θ_i = pos·base^(-2i/n_rot) is built in float32 by i products (theta *= theta_scale), so "
     "its error grows with i and abs(θ); freq factor, YaRN mix, cos/sin and the rotation add a "
     "few u"},
    {"SOFT_MAX", "F32",
     "p·((K + 8)·u + 2u·(abs(z) + max abs(z))), abs(z) = abs(scale·x) + abs(mask); "
     "0 for a fully masked row",
     "z is rounded (2u·abs(z)) and exp turns that absolute error into a relative error of p; "
     "the sum of K positive terms is within (K-1)·u; exp and the divide <= 8u"},
    {"FLASH_ATTN", "K F32", "score δ_j = (D + 2)·u·scale·Σ abs(q·k_j)",
     "a float32 dot product over D"},
    {"FLASH_ATTN", "K F16", "score δ_j = (2^-11 + (D + 2)·u)·scale·Σ abs(q·k_j)",
     "q may be rounded to F16 for the dot product (as ggml)"},
    {"FLASH_ATTN", "K Q8_0",
     "score δ_j = scale·(Σ abs(k_j)·amax32(q)/127 + (D + 2)·u·Σ abs(q·k_j))",
     "q may be quantized to Q8_0 blocks for the dot product (as ggml)"},
    {"FLASH_ATTN", "output, V F32",
     "(2Δ(1 + Δ) + (4·n_kv + 16)·u)·Σ_j p_j·abs(v_j), Δ = max δ_j over unmasked j; "
     "0 for a fully masked row",
     "score errors move each p_j by <= p_j·(e^(2Δ) - 1); the online softmax rescales the "
     "accumulator at most once per position (<= 4u each)"},
    {"FLASH_ATTN", "output, V F16 or Q8_0",
     "(2Δ(1 + Δ) + 2^-11 + (4·n_kv + 16)·u)·Σ_j p_j·abs(v_j); 0 for a fully masked row",
     "as V F32, and p may be rounded to F16 once for the P·V product (no F16 accumulation)"},
    {"SILU, SWIGLU", "F32", "8u·abs(want) + 2^-126",
     "exp within 2 ulp, then 1 + e, a divide and (SWIGLU) a product; results below the "
     "normal range (x below about -92) may flush to 0"},
    {"GELU", "F32", "8u·(abs(x) + abs(want))",
     "tanh within 4 ulp; 1 + tanh cancels for x << 0, so its absolute error (<= 6u) times "
     "x/2 bounds the result"},
    {"CPY", "F32->F16, F32->BF16, F16->F32", "0",
     "round to nearest even; the reference rounds in float64 by scaling to the format's "
     "quantum"},
    {"CPY", "F32->Q8_0", "d/2 + 127·abs(f16(d) - d) + 4u·amax32, d = amax32/127",
     "half a quantization step, plus the F16 rounding of the block scale times the largest "
     "code"},
    {"ARGMAX", "F32->I32", "0", "exact comparisons; ties give the first index"},
};

bool is_k_quant(GgmlType t) {
  return t == GgmlType::Q2_K || t == GgmlType::Q3_K || t == GgmlType::Q4_K || t == GgmlType::Q5_K ||
         t == GgmlType::Q6_K;
}

}  // namespace

std::span<const ToleranceRow> tolerance_table() {
  return kTable;
}

std::string markdown_row(const ToleranceRow& row) {
  return "| " + std::string(row.op) + " | " + std::string(row.types) + " | " +
         std::string(row.bound) + " | " + std::string(row.why) + " |";
}

double block_weighted_amax(std::span<const double> w, std::span<const double> a, int64_t block) {
  double sum = 0;
  for (size_t b = 0; b < a.size(); b += block) {
    double amax = 0, wsum = 0;
    for (size_t i = b; i < b + block && i < a.size(); ++i) {
      amax = std::max(amax, std::fabs(a[i]));
      wsum += std::fabs(w[i]);
    }
    sum += wsum * amax;
  }
  return sum;
}

double get_rows_bound(GgmlType type, double block_max) {
  return traits(type).block_size == 1 ? 0.0 : 8 * kU * block_max;
}

double rms_norm_bound(int64_t k, double want) {
  return (k / 2.0 + 6) * kU * std::fabs(want);
}

double norm_bound(int64_t k, double x, double mean_abs, double s) {
  return (1.5 * k + 8) * kU * (std::fabs(x) + mean_abs) * s;
}

int64_t mul_mat_act_block(GgmlType weight) {
  if (traits(weight).block_size == 1) return 0;
  return is_k_quant(weight) ? 256 : 32;
}

double mul_mat_bound(GgmlType weight, int64_t k, double mag, double amag) {
  const double sum_error = k * kU * mag;
  switch (weight) {
    case GgmlType::F32:
      return sum_error;
    case GgmlType::F16:
      return kF16Rel * mag + sum_error;
    case GgmlType::BF16:
      return kBF16Rel * mag + sum_error;
    default:
      return kQ8Step * amag + sum_error;
  }
}

double elementwise_bound(double want) {
  return kU * std::fabs(want);
}

double rope_bound(int64_t i, double theta, double xa, double xb, double mscale) {
  return std::fabs(mscale) * (std::fabs(xa) + std::fabs(xb)) *
         ((4.0 * i + 8) * kU * std::fabs(theta) + 8 * kU);
}

double softmax_bound(double p, int64_t k, double z_mag, double z_max_mag) {
  return p * ((k + 8) * kU + 2 * kU * (z_mag + z_max_mag));
}

double flash_attn_score_bound(GgmlType k_type, int64_t d, double scale, double dot_mag,
                              double qk_amag) {
  const double sum_error = (d + 2) * kU * dot_mag;
  switch (k_type) {
    case GgmlType::F16:
      return scale * (kF16Rel * dot_mag + sum_error);
    case GgmlType::Q8_0:
      return scale * (kQ8Step * qk_amag + sum_error);
    default:
      return scale * sum_error;
  }
}

double flash_attn_out_bound(GgmlType v_type, int64_t n_kv, double delta, double pv_mag) {
  const double p_rounding = v_type == GgmlType::F32 ? 0.0 : kF16Rel;
  return (2 * delta * (1 + delta) + p_rounding + (4.0 * n_kv + 16) * kU) * pv_mag;
}

double silu_bound(double want) {
  return 8 * kU * std::fabs(want) + 0x1p-126;
}

double gelu_bound(double x, double want) {
  return 8 * kU * (std::fabs(x) + std::fabs(want));
}

double cpy_q8_0_bound(double amax, double d16) {
  const double d = amax / 127;
  return d / 2 + 127 * std::fabs(d16 - d) + 4 * kU * amax;
}

}  // namespace polyinfer::conformance
