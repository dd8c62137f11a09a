#version 450
// MUL_MAT: one workgroup per output element dst[n, m, b2, b3]; its 64
// invocations stride over K, decoding the weight row from its stored blocks,
// then reduce. With subgroup arithmetic (USE_SUBGROUP) the reduction is
// subgroupAdd plus one shared step; without, a shared-memory tree.
#include "common.glsl"
#include "dequant.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint WTYPE = 0u;

shared float partial[64];

void main() {
  const uint N = t_ne(T_DST, 0u), M = t_ne(T_DST, 1u), B2 = t_ne(T_DST, 2u);
  const uint o = wg_index();
  if (o >= N * M * B2 * t_ne(T_DST, 3u)) return;  // uniform per workgroup
  const uint n = o % N, m = (o / N) % M, b2 = (o / (N * M)) % B2, b3 = o / (N * M * B2);
  const uint r2 = B2 / t_ne(T_SRC0, 2u), r3 = t_ne(T_DST, 3u) / t_ne(T_SRC0, 3u);
  const uint wrow = t_off(T_SRC0) + n * t_nb(T_SRC0, 1u) + (b2 / r2) * t_nb(T_SRC0, 2u) +
                    (b3 / r3) * t_nb(T_SRC0, 3u);
  const uint arow = t_off(T_SRC1) + m * t_nb(T_SRC1, 1u) + b2 * t_nb(T_SRC1, 2u) +
                    b3 * t_nb(T_SRC1, 3u);
  const uint K = t_ne(T_SRC0, 0u);
  float acc = 0.0;
  for (uint k = gl_LocalInvocationID.x; k < K; k += 64u) {
    acc += dq(T_SRC0, WTYPE, wrow, k) * ldf(T_SRC1, arow + 4u * k);
  }
#ifdef USE_SUBGROUP
  acc = subgroupAdd(acc);
  if (gl_SubgroupInvocationID == 0u) partial[gl_SubgroupID] = acc;
  barrier();
  if (gl_LocalInvocationID.x == 0u) {
    float s = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) s += partial[i];
    stf(t_off(T_DST) + 4u * n + m * t_nb(T_DST, 1u) + b2 * t_nb(T_DST, 2u) + b3 * t_nb(T_DST, 3u), s);
  }
#else
  partial[gl_LocalInvocationID.x] = acc;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (gl_LocalInvocationID.x < s) partial[gl_LocalInvocationID.x] += partial[gl_LocalInvocationID.x + s];
    barrier();
  }
  if (gl_LocalInvocationID.x == 0u) {
    stf(t_off(T_DST) + 4u * n + m * t_nb(T_DST, 1u) + b2 * t_nb(T_DST, 2u) + b3 * t_nb(T_DST, 3u),
        partial[0]);
  }
#endif
}
