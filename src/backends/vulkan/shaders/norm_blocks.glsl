// The residual ADD after a decode product and the 8-bit codes of the next
// norm's input times its weight, made 32 rows at a time by the product's own
// workgroups (vk_fusion.hpp's Unit::norm; the module mul_mat_vec_direct_norm),
// so that no norm dispatch and no barrier stand between the product and the
// products after the norm. The norm's scale r = 1 / sqrt(mean(sum²) + eps)
// is left to those products (norm_scale.glsl): a block's codes are the same
// whatever it is scaled by, its d and the products' sums scale with it. This
// is the CUDA backend's kMatvecNormQ (docs/BACKEND_CUDA.md, "Fused units").
// Session 30 measured the bound (BENCHMARKS.md): with the norm dispatch gone
// and only a count per workgroup kept, llama-1b Q4_0's step took 154 us less
// and llama-8b Q4_K_M's 454; a whole norm in the product's last workgroup
// took more than that back.
//
// Every row is stored and counted (row_blocks.glsl); the subgroup whose count
// completes a block reads its 32 sums, and eight of its lanes (four values
// each, q8_lanes.glsl) write:
//   * the ADD's output, sum = product + residual (T_OUT0; the residual in
//     T_SRC1, which the kernel does not read as activations);
//   * block b of the codes of sum · w (w, the norm's weight row, in T_SRC3)
//     into the next products' region (T_OUT1, quantize_q8.comp's layout);
//   * Σ sum² of the block in the block's word 10 (zero in quantize_q8.comp's
//     blocks; the next products add them up as they load the blocks).
// RMS_NORM's and MUL's outputs are written by a norm dispatch beside the next
// products (vk_fusion.hpp). Needs what row_blocks.glsl needs, q8_lanes.glsl
// (lanes of 8) and subgroup arithmetic (reduce.glsl's USE_SUBGROUP).
#include "row_blocks.glsl"

// Stores row value v at byte a and counts it in its block (row_blocks.glsl);
// true for the block's last row.
bool store_row(uint a, float v, uint block) {
  dst_c.w[a >> 2] = floatBitsToUint(v);
  return count_row(block, 32u);
}

// Block `block` of the N rows, by the subgroup whose invocation stored its
// last row (`last` true in that invocation): its first eight lanes.
void norm_block(uint block, bool last) {
  if (!acquire_block(last)) return;
  const uint j = gl_SubgroupInvocationID;
  if (j >= 8u) return;
  const uint k = 32u * block + 4u * j, y = (t_off(T_DST) >> 2) + k;
  const vec4 p = uintBitsToFloat(uvec4(dst_c.w[y], dst_c.w[y + 1u], dst_c.w[y + 2u], dst_c.w[y + 3u]));
  const vec4 res = uintBitsToFloat(words4(T_SRC1, (t_off(T_SRC1) >> 2) + k));
  const vec4 w = uintBitsToFloat(words4(T_SRC3, (t_off(T_SRC3) >> 2) + k));
  const vec4 sum = p + res;
  const uint s = (t_off(T_OUT0) >> 2) + k;
  [[unroll]] for (uint e = 0u; e < 4u; ++e) outs[0].w[s + e] = floatBitsToUint(sum[e]);
  float s2 = dot(sum, sum);
  s2 += subgroupShuffleXor(s2, 1u);
  s2 += subgroupShuffleXor(s2, 2u);
  s2 += subgroupShuffleXor(s2, 4u);
  const uvec2 q = quantize_lanes(sum * w, j);
  const uint o = t_off(T_OUT1) >> 2;
  outs[1].w[o + 12u * block + j] = q.x;
  if (j < 4u) outs[1].w[o + 12u * block + 8u + j] = j == 2u ? floatBitsToUint(s2) : q.y;
}
