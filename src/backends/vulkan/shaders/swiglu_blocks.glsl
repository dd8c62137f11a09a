// SWIGLU over a decode step's gate and up products and the 8-bit codes of
// its output for the down product, made 32 rows at a time by the workgroups
// of one dispatch that computes both products (vk_fusion.hpp's Unit::swiglu;
// the module mul_mat_vec_direct_swiglu), so that no SWIGLU dispatch and no
// barrier stand between the products and the down product.
//
// Workgroup o computes rows of the gate (o even; weights in T_SRC0, rows in
// T_DST) or of the up product (o odd; weights in T_SRC3, rows in T_OUT0) of
// row group o / 2 (weight_slot). Each row is stored and counted
// (row_blocks.glsl): 64 counts complete a block, its 32 gate rows and its 32
// up rows. Eight lanes of the subgroup that completes it (four values each,
// q8_lanes.glsl) write:
//   * SWIGLU's output y = silu(gate) · up, as binary.comp and
//     quantize_q8.comp compute it (T_OUT1);
//   * block b of y's codes into the down product's region, which lies in
//     T_OUT2's binding at the byte offset that host-derived word 9 holds
//     (p_u(9); quantize_q8.comp's layout, words 10 and 11 zero).
// Needs common.glsl, q8_lanes.glsl (lanes of 8), subgroup arithmetic, binding
// 3 declared as outs[3] and the Vulkan memory model.
#include "row_blocks.glsl"

// The up product's rows (outs[0]), which the block's last subgroup reads.
layout(std430, set = 0, binding = 3) nonprivate buffer OutShared { uint w[]; } outs_c[3];

// Workgroup o's weights: T_SRC0 (gate) for even o, T_SRC3 (up) for odd.
uint weight_slot(uint o) { return (o & 1u) != 0u ? T_SRC3 : T_SRC0; }

// Stores row n's value v (of the gate or up product, as `slot` says) and
// counts it in its block; true for the block's last row of the two.
bool store_swiglu_row(uint slot, uint n, float v) {
  if (slot == T_SRC3)
    outs_c[0].w[(t_off(T_OUT0) >> 2) + n] = floatBitsToUint(v);
  else
    dst_c.w[(t_off(T_DST) >> 2) + n] = floatBitsToUint(v);
  return count_row(n / 32u, 64u);
}

// Block `block` of SWIGLU's output, by the subgroup whose invocation stored
// the last of its 64 rows (`last` true there): its first eight lanes.
void swiglu_block(uint block, bool last) {
  if (!acquire_block(last)) return;
  const uint j = gl_SubgroupInvocationID;
  if (j >= 8u) return;
  const uint k = 32u * block + 4u * j, g = (t_off(T_DST) >> 2) + k, u = (t_off(T_OUT0) >> 2) + k;
  const vec4 gate = uintBitsToFloat(uvec4(dst_c.w[g], dst_c.w[g + 1u], dst_c.w[g + 2u], dst_c.w[g + 3u]));
  const vec4 up = uintBitsToFloat(
      uvec4(outs_c[0].w[u], outs_c[0].w[u + 1u], outs_c[0].w[u + 2u], outs_c[0].w[u + 3u]));
  vec4 y;
  [[unroll]] for (uint e = 0u; e < 4u; ++e) y[e] = silu_acc(gate[e]) * up[e];
  const uint s = (t_off(T_OUT1) >> 2) + k;
  [[unroll]] for (uint e = 0u; e < 4u; ++e) outs[1].w[s + e] = floatBitsToUint(y[e]);
  const uvec2 q = quantize_lanes(y, j);
  const uint o = (p_u(9u) >> 2) + 12u * block;
  outs[2].w[o + j] = q.x;
  if (j < 4u) outs[2].w[o + 8u + j] = q.y;
}
