// How MUL_MAT with at most kMatvecCols activation columns (decode) runs: which
// matrix-vector shader, its specialization constants and workgroup count.
#pragma once
#include "backends/vulkan/vk_features.hpp"
#include "backends/vulkan/vk_ops.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::vk {

constexpr int64_t kMatvecCols = 8;

// Plans a MUL_MAT node that plan_node() has checked (types, shapes) and
// whose destination has at most kMatvecCols columns.
void plan_matvec(const pi_node& n, const Features& features, OpPlan* p);

// The same, reading 8-bit activations as codes from its src2 binding when
// `codes` (and the node has 8-bit activations), else quantizing them in its
// workgroups: where the fusion planner decided (vk_fusion.hpp's
// Unit::reads_codes).
void plan_matvec_codes(const pi_node& n, const Features& features, bool codes, OpPlan* p);

// Whether a MUL_MAT node that reads codes from src2 (`codes`, already
// checked with matvec_int_dot) runs in shaders/mul_mat_vec_direct.comp: Q4_0,
// Q4_K or Q6_K rows at even (Q4_K: word) byte offsets, one batch.
bool matvec_direct(const pi_node& n, bool codes);

// Whether the direct kernel's plain modules take node n's rows two or four
// per workgroup (Q4_0; Q4_K in one-column products of 4,096 to 8,192 rows),
// so that a ROPE pair, two consecutive rows, lies in one workgroup; else one
// (other K-quant products), and a folded ROPE pairs its rows through a word
// per pair.
bool matvec_direct_pairs(const pi_node& n);

// Whether the direct kernel may also do the residual ADD after node n and
// make the next norm's codes a block of 32 rows at a time (vk_fusion.hpp's
// Unit::norm; the module mul_mat_vec_direct_norm), where matvec_direct holds
// (Q4_0, Q4_K or Q6_K rows): one column of whole 32-value blocks, subgroups
// with the shuffles of eight lanes (Features::subgroup_lanes8) and the Vulkan
// memory model. On the H200 (session 36, GPU span of a decode step) llama-8b
// Q4_0's fell 2,672 -> 2,645 us with the count acquiring in the last subgroup
// only (norm_blocks.glsl), llama-1b Q4_0's 893 -> 882; with K-quant products
// too, llama-8b Q4_K_M's 3,540 -> 3,491 and llama-1b Q4_K_M's 1,131 -> 1,082
// (plan_matvec_norm_tail's rows).
bool matvec_direct_norm(const pi_node& n, const Features& features);

// Whether the gate product `gate` may run with the up product and SWIGLU
// after it in one dispatch (vk_fusion.hpp's Unit::swiglu), as
// matvec_direct_norm, for K-quant rows and at most 8,192 Q4_0 rows. The fold
// saves a barrier stage per layer, but its dispatch streams the weights more
// slowly than the two products do, more so the larger they are. On the H200
// (session 36, GPU span of a decode step, two calls) llama-1b's 8,192 rows:
// Q4_K_M 1,026 and 1,042 us against 1,078 and 1,094 unfolded (the second
// call with a copy of the loop per weight slot), Q4_0 862 and 874 against
// 875 and 883; llama-8b's 14,336 rows: Q4_K_M 3,667 and 3,770 against 3,476
// and 3,499, Q4_0 2,734 and 2,747 against 2,642 and 2,653. Session 42 (one
// call, two rounds, after session 39's branch-free scales): llama-8b Q4_K_M
// 2,868 us folded with four rows per workgroup against 2,899 unfolded (tg128
// 337.7 against 334.3, -r 5, another call), llama-8b Q4_0 2,468 against 2,424
// (eight rows 2,491, two 2,519).
bool matvec_direct_swiglu(const pi_node& gate, const Features& features);

// Whether products a and b (both where matvec_direct holds) get the same
// direct-kernel plan: one type, shape and row stride, both rows 16-byte
// aligned or neither (the Q4_K pieces), so that one dispatch can run both
// (Unit::swiglu).
bool matvec_direct_alike(const pi_node& a, const pi_node& b);

// Turns the direct kernel's plan *p for node n (no ROPE or cache epilogue)
// into mul_mat_vec_direct_norm's, with K-quant rows two per workgroup in the
// larger matrices (Q4_0's two).
void plan_matvec_norm_tail(const pi_node& n, OpPlan* p);

// Turns the direct kernel's plan *p for the gate product (no epilogue) into
// mul_mat_vec_direct_swiglu's, which also runs the up product alike
// (matvec_direct_alike), its workgroups alternating with the gate's, and
// SWIGLU over both (vk_fusion.hpp's Unit::swiglu; shaders/swiglu_blocks.glsl),
// Q4_0 rows four per workgroup, K-quant rows two (four past 8,192 rows).
void plan_matvec_swiglu_tail(const pi_node& gate, OpPlan* p);

// Makes a plan that reads codes (plan_matvec_codes; after
// plan_matvec_epilogue, whose words it keeps) scale its sums by the codes'
// pending norm (Unit::scale_norm; shaders/norm_scale.glsl): spec constant 8,
// the norm's eps in host-derived word 8.
void plan_matvec_norm_scale(float eps, OpPlan* p);

// A direct product's activation blocks loaded with its weights (spec constant
// 9, mul_mat_vec_direct.comp's EARLY) where that was measured faster: Q6_K
// and Q4_0 rows of one column.
void plan_matvec_early_acts(const pi_node& n, OpPlan* p);

// Turns the direct kernel's plan *p (plan_matvec_codes, where matvec_direct
// holds) into one whose epilogue also does a later node's work (vk_fusion.hpp's
// Unit::rope, Unit::cache): spec constants ROPE and CACHE (`cache_type` + 1,
// or 0 with no cache write).
void plan_matvec_epilogue(bool rope, int cache_type, OpPlan* p);

// Whether a MUL_MAT node runs with 8-bit activations (integer dot products);
// with features.prequant it then reads them as the blocks of
// shaders/quantize_q8.comp from its src2 binding (vk_fusion.hpp).
bool matvec_int_dot(const pi_node& n, const Features& features);
// Whether it reads them from a quantize dispatch of their own
// (Features::prequant, rows of at least Features::prequant_min_k values).
bool matvec_prequant(const pi_node& n, const Features& features);

}  // namespace polyinfer::vk
