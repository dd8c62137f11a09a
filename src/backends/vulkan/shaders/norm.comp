#version 450
// RMS_NORM (host word 0 = 0) and NORM (= 1): one workgroup of WG per row (256;
// a fused norm: vk_fusion.hpp's fused_norm_workgroup, 1,024 for long rows). A
// row of up to WG * R values is read once into registers (a decode step's
// 2048..8192-value rows took one 64-wide workgroup looping over the row three
// times); longer rows read the rest again in each pass. Sums: subgroupAdd plus
// one shared step (USE_SUBGROUP), or a shared tree. USE_CODES: the next
// product's codes, with USE_SUBGROUP eight invocations per block (q8_lanes.glsl).
// FUSE (vk_fusion.hpp) 1: RMS_NORM(x = src0) and MUL(norm, w = src2), the
// norm to slot T_OUT0 and the product to dst; 2: and before them ADD(src0,
// src1), the sum to T_OUT1. The host checks that no output shares bytes with
// an input or another output, that every tensor is in whole words and that
// the row fits WG * R, so fused_main has no tail loops.
#include "common.glsl"
#include "rows.glsl"
#ifdef USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif
layout(constant_id = 0) const uint FUSE = 0u;
layout(constant_id = 1) const uint R = 16u;
layout(local_size_x = 256, local_size_x_id = 2) in;
const uint WG = gl_WorkGroupSize.x;  // a power of two

// The fused dispatch's norm (outs[0], slot T_OUT0), sum (outs[1], T_OUT1)
// and, with USE_CODES, the next product's codes (outs[2], T_OUT2).
layout(std430, set = 0, binding = 3) buffer Out { uint w[]; } outs[3];

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

#ifdef USE_CODES
#include "q8_block.glsl"
#ifdef USE_SUBGROUP
#include "q8_lanes.glsl"
#endif
// The row's MUL output, a float per value and a pad after every 32, so that
// the invocations that read a block each hit different banks.
shared float row_vals[WG * R + WG * R / 32u];

// USE_CODES (vk_fusion.hpp's Unit::writes_codes): the MUL output of row r,
// y[i] = value t + i WG of this invocation, as the next product's 8-bit codes
// to slot T_OUT2, quantize_q8.comp's blocks (48 bytes each, block i of row r
// at r K / 32 + i), so that no quantize dispatch and barrier go between the
// norm and the product. The host checks that K is a multiple of 32.
void store_codes(uint r, uint K, float y[R]) {
  const uint t = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    const uint k = t + i * WG;
    if (k < K) row_vals[k + k / 32u] = y[i];
  }
  barrier();
  const uint nb = K / 32u, o = (t_off(T_OUT2) >> 2) + 12u * r * nb;
#ifdef USE_SUBGROUP
  // Eight lanes per block (q8_lanes.glsl); K / 4 is a multiple of 8 and WG
  // of 8, so a block's eight lanes loop together. With the padding, the 32
  // lanes of four blocks read 32 different banks.
  for (uint g = lane_index(); g < K / 4u; g += WG) {
    const uint blk = g / 8u, j = g % 8u, b = 33u * blk + 4u * j;
    const uvec2 w =
        quantize_lanes(vec4(row_vals[b], row_vals[b + 1u], row_vals[b + 2u], row_vals[b + 3u]), j);
    outs[2].w[o + 12u * blk + j] = w.x;
    if (j < 4u) outs[2].w[o + 12u * blk + 8u + j] = w.y;
  }
#else
  for (uint blk = t; blk < nb; blk += WG) {
    vec4 x[8];
    const uint b = 33u * blk;
    [[unroll]] for (uint j = 0u; j < 8u; ++j)
      x[j] = vec4(row_vals[b + 4u * j], row_vals[b + 4u * j + 1u], row_vals[b + 4u * j + 2u],
                  row_vals[b + 4u * j + 3u]);
    const Q8Block q = quantize_block(x);
    [[unroll]] for (uint j = 0u; j < 12u; ++j) outs[2].w[o + 12u * blk + j] = q8_word(q, j);
  }
#endif
}
#endif

// Word i of source t as a float: the fused dispatch's tensors are in whole
// words (the host checks), so no byte-address path.
float ldw(uint t, uint i) { return uintBitsToFloat(bufs[t].w[i]); }

// FUSE 1 and 2. Every load of the row (src0, src1, the weight) is issued
// before any is used, at an address clamped into the row, and the values
// past it are zeroed by a select: with ldf()'s alignment branch per value the
// driver kept the loads apart, and the weight was read only after the sum
// (llama-8b on an H100: 21.8 us per ADD+RMS_NORM+MUL of 4,096 values, a
// plain ADD 5.3).
void fused_main(uint r) {
  const uint K = t_ne(T_SRC0, 0u), t = gl_LocalInvocationID.x;
  const uint x = row_addr(T_SRC0, r) >> 2, w = t_off(T_SRC2) >> 2;
  const uint b = FUSE == 2u ? row_addr(T_SRC1, r) >> 2 : 0u;
  float v[R], wv[R];
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    const uint k = min(t + i * WG, K - 1u);
    v[i] = ldw(T_SRC0, x + k);
    wv[i] = ldw(T_SRC2, w + k);
    if (FUSE == 2u) v[i] += ldw(T_SRC1, b + k);
  }
  float s2 = 0.0;
  [[unroll]] for (uint i = 0u; i < R; ++i) s2 += t + i * WG < K ? v[i] * v[i] : 0.0;
  if (FUSE == 2u) {
    const uint sum = row_addr(T_OUT1, r) >> 2;
    [[unroll]] for (uint i = 0u; i < R; ++i) {
      const uint k = t + i * WG;
      if (k < K) outs[1].w[sum + k] = floatBitsToUint(v[i]);
    }
  }
  const float scale = 1.0 / sqrt(sum_all(s2) / float(K) + p_f(0u));
  const uint norm = row_addr(T_OUT0, r) >> 2, y = row_addr(T_DST, r) >> 2;
  float prod[R];
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    const uint k = t + i * WG;
    const float n = v[i] * scale;
    prod[i] = n * wv[i];
    if (k < K) {
      outs[0].w[norm + k] = floatBitsToUint(n);
      dst.w[y + k] = floatBitsToUint(prod[i]);
    }
  }
#ifdef USE_CODES
  store_codes(r, K, prod);
#endif
}

void main() {
  const uint r = wg_index();
  if (r >= n_rows(T_SRC0)) return;
  if (FUSE != 0u) {
    fused_main(r);
    return;
  }
  const uint K = t_ne(T_SRC0, 0u), x = row_addr(T_SRC0, r), y = row_addr(T_DST, r);
  const uint t = gl_LocalInvocationID.x;
  const float eps = p_f(0u);
  const bool center = p_u(0u) == 1u;
  float v[R];  // elements t + i WG; 0 past the row
  if ((x & 3u) == 0u) {  // as fused_main: the loads issued together
    [[unroll]] for (uint i = 0u; i < R; ++i) {
      const float e = ldw(T_SRC0, (x >> 2) + min(t + i * WG, K - 1u));
      v[i] = t + i * WG < K ? e : 0.0;
    }
  } else {
    [[unroll]] for (uint i = 0u; i < R; ++i) {
      const uint k = t + i * WG;
      v[i] = k < K ? ldf(T_SRC0, x + 4u * k) : 0.0;
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
  [[unroll]] for (uint i = 0u; i < R; ++i) {
    const uint k = t + i * WG;
    if (k < K) stf(y + 4u * k, (v[i] - mean) * scale);
  }
  for (uint k = t + R * WG; k < K; k += WG) stf(y + 4u * k, (ldf(T_SRC0, x + 4u * k) - mean) * scale);
}
