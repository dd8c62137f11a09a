#version 450
// RMS_NORM (host word 0 = 0) and NORM (= 1): one workgroup of 256 per row. A
// row of up to WG * R values is read once into registers (a decode step's
// 2048..8192-value rows took one 64-wide workgroup looping over the row three
// times); longer rows read the rest again in each pass. Sums: subgroupAdd plus
// one shared step (USE_SUBGROUP), or a shared tree.
#include "common.glsl"
#include "rows.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif
const uint WG = 256u, R = 16u;
layout(local_size_x = 256) in;

shared float part[WG];

// Sum over the workgroup of one value per invocation; every invocation gets it.
float sum_all(float v) {
  const uint t = gl_LocalInvocationID.x;
#ifdef USE_SUBGROUP
  v = subgroupAdd(v);
  if (gl_SubgroupInvocationID == 0u) part[gl_SubgroupID] = v;
  barrier();
  float s = 0.0;
  for (uint g = 0u; g < gl_NumSubgroups; ++g) s += part[g];
#else
  part[t] = v;
  barrier();
  for (uint h = WG / 2u; h > 0u; h >>= 1) {
    if (t < h) part[t] += part[t + h];
    barrier();
  }
  const float s = part[0];
#endif
  barrier();  // part is reused by the next sum
  return s;
}

void main() {
  const uint r = wg_index();
  if (r >= n_rows(T_SRC0)) return;
  const uint K = t_ne(T_SRC0, 0u), x = row_addr(T_SRC0, r), y = row_addr(T_DST, r);
  const uint t = gl_LocalInvocationID.x;
  const float eps = p_f(0u);
  const bool center = p_u(0u) == 1u;
  float v[R];  // elements t + i WG; 0 past the row
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    const uint k = t + i * WG;
    v[i] = k < K ? ldf(T_SRC0, x + 4u * k) : 0.0;
  }
  float mean = 0.0;
  if (center) {
    float s = 0.0;
    [[unroll]] for (uint i = 0u; i < R; ++i) s += v[i];
    for (uint k = t + R * WG; k < K; k += WG) s += ldf(T_SRC0, x + 4u * k);
    mean = sum_all(s) / float(K);
  }
  float s2 = 0.0;
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    const float d = t + i * WG < K ? v[i] - mean : 0.0;
    s2 += d * d;
  }
  for (uint k = t + R * WG; k < K; k += WG) {
    const float d = ldf(T_SRC0, x + 4u * k) - mean;
    s2 += d * d;
  }
  const float scale = 1.0 / sqrt(sum_all(s2) / float(K) + eps);
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    const uint k = t + i * WG;
    if (k < K) stf(y + 4u * k, (v[i] - mean) * scale);
  }
  for (uint k = t + R * WG; k < K; k += WG) stf(y + 4u * k, (ldf(T_SRC0, x + 4u * k) - mean) * scale);
}
