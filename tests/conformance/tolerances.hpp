// The conformance tolerances: one table (op, types, bound, why), rendered the
// same in docs/OPS.md (a test checks the two agree), and one function per row
// that computes the bound for an element. Every bound is on |got - want|,
// where want is the float64 reference; u = 2^-24 is the float32 unit roundoff.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "polyinfer/dtype.hpp"

namespace polyinfer::conformance {

inline constexpr double kU = 0x1p-24;

struct ToleranceRow {
  std::string_view op, types, bound, why;
};

std::span<const ToleranceRow> tolerance_table();
// A row as a markdown table line: "| op | types | bound | why |".
std::string markdown_row(const ToleranceRow& row);

// Σ_i |w_i| · amax(a over the block of `block` elements holding i): the size
// of what quantizing a to 8-bit blocks can change in Σ w_i a_i.
double block_weighted_amax(std::span<const double> w, std::span<const double> a, int64_t block);

// GET_ROWS: `block_max` is max |x| over the element's quantization block.
double get_rows_bound(GgmlType type, double block_max);
// RMS_NORM over rows of k elements.
double rms_norm_bound(int64_t k, double want);
// NORM: x the input element, mean_abs the row's mean |x|, s = 1/sqrt(var + eps).
double norm_bound(int64_t k, double x, double mean_abs, double s);
// MUL_MAT: mag = Σ|w_i a_i|; amag = block_weighted_amax(w, a, activation block).
double mul_mat_bound(GgmlType weight, int64_t k, double mag, double amag);
// Activation block length that a weight type's dot products may quantize to (0: none).
int64_t mul_mat_act_block(GgmlType weight);
// ADD, MUL, SCALE: one float32 rounding.
double elementwise_bound(double want);
// ROPE: frequency index i, angle theta, the rotated pair (xa, xb), mscale.
double rope_bound(int64_t i, double theta, double xa, double xb, double mscale);
// SOFT_MAX: p the probability, k the row length, z_mag = |scale·x_i| + |mask_i|,
// z_max_mag the largest z_mag of the row's unmasked elements.
double softmax_bound(double p, int64_t k, double z_mag, double z_max_mag);
// FLASH_ATTN score error of one KV position: dot_mag = Σ_d |q_d k_d|,
// qk_amag = block_weighted_amax(k, q, 32).
double flash_attn_score_bound(GgmlType k_type, int64_t d, double scale, double dot_mag,
                              double qk_amag);
// FLASH_ATTN output element: delta = max score bound over unmasked positions,
// pv_mag = Σ_j p_j |v_j|.
double flash_attn_out_bound(GgmlType v_type, int64_t n_kv, double delta, double pv_mag);
// SILU and SWIGLU.
double silu_bound(double want);
// GELU: x the input.
double gelu_bound(double x, double want);
// CPY F32 -> Q8_0: amax of the element's 32-block; d16 the F16 value nearest amax/127.
double cpy_q8_0_bound(double amax, double d16);

}  // namespace polyinfer::conformance
