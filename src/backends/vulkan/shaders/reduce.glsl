// The workgroup sums of the matrix-vector kernels: each invocation holds
// NSUMS partial sums acc[] (one per weight row x activation column); after
// reduce_sums() invocation i < NSUMS finds the workgroup's total of acc[i]
// in red[i][0].
// Needs NSUMS, WG and `float acc[NSUMS]`.
//
// USE_SUBGROUP: subgroupAdd, then one invocation per value adds the subgroup
// totals. red has 32 slots per value, so the host takes this path only when
// a workgroup has at most 32 subgroups (vk_matvec_plan.cpp). Without subgroup
// arithmetic the invocations fold their values into the 32 slots one group of
// 32 at a time (WG / 32 barriers): a tree over WG slots per value would need
// NSUMS x WG floats of shared memory, which the staged kernel spends on rows.
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif

shared float red[NSUMS][32];

void reduce_sums() {
  const uint t = gl_LocalInvocationID.x;
#ifdef USE_SUBGROUP
  [[unroll]] for (uint i = 0u; i < NSUMS; ++i) {
    const float s = subgroupAdd(acc[i]);
    if (gl_SubgroupInvocationID == 0u) red[i][gl_SubgroupID] = s;
  }
  barrier();
  const uint parts = gl_NumSubgroups;
#else
  for (uint g = 0u; g < WG / 32u; ++g) {
    if (t / 32u == g) {
      [[unroll]] for (uint i = 0u; i < NSUMS; ++i)
        red[i][t % 32u] = (g == 0u ? 0.0 : red[i][t % 32u]) + acc[i];
    }
    barrier();
  }
  const uint parts = 32u;
#endif
  if (t < NSUMS) {
    float s = 0.0;
    for (uint g = 0u; g < parts; ++g) s += red[t][g];
    red[t][0] = s;
  }
}
