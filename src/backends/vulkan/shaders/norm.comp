#version 450
// RMS_NORM (host word 0 = 0) and NORM (= 1): one workgroup of 256 per row. A
// row of up to WG * R values is read once into registers (a decode step's
// 2048..8192-value rows took one 64-wide workgroup looping over the row three
// times); longer rows read the rest again in each pass. Sums: subgroupAdd plus
// one shared step (USE_SUBGROUP), or a shared tree.
// FUSE (vk_fusion.hpp) 1: RMS_NORM(x = src0) and MUL(norm, w = src2), the
// norm to slot T_OUT0 and the product to dst; 2: and before them ADD(src0,
// src1), the sum to T_OUT1. The host checks that no output shares bytes with
// an input or another output, that every tensor is in whole words and that
// the row fits WG * R (R = 32 then), so the tail loops do not run.
#include "common.glsl"
#include "rows.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif
layout(constant_id = 0) const uint FUSE = 0u;
layout(constant_id = 1) const uint R = 16u;
const uint WG = 256u;
layout(local_size_x = 256) in;

// The fused dispatch's norm (outs[0], slot T_OUT0) and sum (outs[1], T_OUT1).
layout(std430, set = 0, binding = 3) buffer Out { uint w[]; } outs[2];

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
  if (FUSE == 2u) {
    const uint b = row_addr(T_SRC1, r), sum = row_addr(T_OUT1, r) >> 2;
    [[unroll]] for (uint i = 0u; i < R; ++i) {
      const uint k = t + i * WG;
      if (k < K) {
        v[i] += ldf(T_SRC1, b + 4u * k);
        outs[1].w[sum + k] = floatBitsToUint(v[i]);
      }
    }
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
  if (FUSE != 0u) {
    const uint norm = row_addr(T_OUT0, r) >> 2, w = t_off(T_SRC2);
    [[unroll]] for (uint i = 0u; i < R; ++i) {
      const uint k = t + i * WG;
      if (k < K) {
        const float n = v[i] * scale;
        outs[0].w[norm + k] = floatBitsToUint(n);
        dst.w[(y >> 2) + k] = floatBitsToUint(n * ldf(T_SRC2, w + 4u * k));
      }
    }
    return;
  }
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    const uint k = t + i * WG;
    if (k < K) stf(y + 4u * k, (v[i] - mean) * scale);
  }
  for (uint k = t + R * WG; k < K; k += WG) stf(y + 4u * k, (ldf(T_SRC0, x + 4u * k) - mean) * scale);
}
