// A matrix-vector product over codes whose norm is pending (vk_fusion.hpp's
// Unit::scale_norm): an earlier product's workgroups wrote the codes of
// sum · w, a norm's input times its weight, block by block, with each block's
// Σ sum² in its word 10 (norm_blocks.glsl; Act::n2). RMS_NORM · w is
// r · sum · w with r = 1 / sqrt(Σ sum² / K + eps) (the RMS_NORM node's
// formula, docs/OPS.md), so the product's sums are those over the codes
// times r. The workgroup loads every block once for its dot products, so each
// invocation adds up the Σ sum² of the blocks it loads (norm_add) and
// reduce_sums' barrier publishes the subgroups' totals: no load of its own.
// Reading the sums from a region of their own cost llama-8b's gate product
// 17.9 -> 20.8 us serialized (H200, session 35), every workgroup reading the
// same few lines. eps is the host-derived float p_x(8).
// Needs common.glsl and Act (unit_dot_q8.glsl); norm_scale_share() goes
// right before reduce_sums() (reduce.glsl).
#ifdef USE_SUBGROUP
layout(constant_id = 8) const bool NORM_SCALE = false;
#else
// The planner scales only in subgroup modules: a pending norm needs
// Features::subgroup_lanes8, under which every matrix-vector workgroup (at most
// 256 invocations, subgroups of at least 8) takes the subgroup reduction.
const bool NORM_SCALE = false;
#endif

shared float norm_part[32];  // the subgroups' sums
float norm_s2 = 0.0;

// A block this invocation dotted (column 0; a pending norm has one column).
void norm_add(Act a) {
  if (NORM_SCALE) norm_s2 += a.n2;
}

// Before reduce_sums(), whose barrier then orders the stores below before
// norm_scale()'s loads.
void norm_scale_share() {
#ifdef USE_SUBGROUP
  if (!NORM_SCALE) return;
  const float s = subgroupAdd(norm_s2);
  if (gl_SubgroupInvocationID == 0u) norm_part[gl_SubgroupID] = s;
#endif
}

// r, for an invocation after reduce_sums().
float norm_scale() {
  float total = 0.0;
#ifdef USE_SUBGROUP
  for (uint g = 0u; g < gl_NumSubgroups; ++g) total += norm_part[g];
#endif
  return 1.0 / sqrt(total / float(t_ne(T_SRC0, 0u)) + p_x(8u));
}
