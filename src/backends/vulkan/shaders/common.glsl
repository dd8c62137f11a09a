// Shared by every compute shader of the Vulkan backend.
//
// Buffers are bound as arrays of 32-bit words and read byte-exactly through
// shifts: block formats have 18/34/144/176/210-byte blocks and tensors sit at
// any byte offset, so no wider view fits them all, and words need no optional
// 8/16-bit storage feature. Binding 0 holds the dispatch's parameter words (written
// by the host before each submission); binding 1 holds src0..src3, read-only (so that
// synchronization validation sees a dispatch write only its destination),
// binding 2 the destination and binding 3 a fused dispatch's three further ones.
#extension GL_EXT_control_flow_attributes : enable

// The dispatch's kParamWords (vk_ops.hpp) parameter words: a uniform buffer of
// its own, which every workgroup reads before its data. As a storage buffer
// indexed by a push constant it cost each dispatch 0.4-1 us more on the H200
// (session 16: llama-1b Q4_0 tg128 545 against 568 tok/s).
layout(std140, set = 0, binding = 0) uniform Params { uvec4 PV[32]; };
uint P(uint i) { return PV[i >> 2][i & 3u]; }
layout(std430, set = 0, binding = 1) readonly buffer Src { uint w[]; } bufs[4];
layout(std430, set = 0, binding = 2) buffer Dst { uint w[]; } dst;

// Tensor slots and the parameter layout (write_params in vk_graph_plan.cpp writes the same).
// Slots 5..7 are the further destinations of a fused dispatch (binding 3,
// declared by the shaders that write them).
const uint T_SRC0 = 0u, T_SRC1 = 1u, T_SRC2 = 2u, T_SRC3 = 3u, T_DST = 4u, T_OUT0 = 5u, T_OUT1 = 6u,
           T_OUT2 = 7u;
uint t_off(uint t) { return P(t * 9u); }
uint t_ne(uint t, uint d) { return P(t * 9u + 1u + d); }
uint t_nb(uint t, uint d) { return P(t * 9u + 5u + d); }
int p_i(uint k) { return int(P(72u + k)); }
float p_f(uint k) { return uintBitsToFloat(P(80u + k)); }
float p_x(uint k) { return uintBitsToFloat(P(88u + k)); }  // host-derived floats
uint p_u(uint k) { return P(88u + k); }                    // host-derived ints

// Workgroups are launched as a 2D grid (x is capped at 65535); this is the flat index.
uint wg_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

uint ld8(uint t, uint a) { return (bufs[t].w[a >> 2] >> ((a & 3u) * 8u)) & 0xFFu; }
uint ld16(uint t, uint a) {
  if ((a & 1u) != 0u) return ld8(t, a) | (ld8(t, a + 1u) << 8);
  return (bufs[t].w[a >> 2] >> ((a & 2u) * 8u)) & 0xFFFFu;
}
uint ld32(uint t, uint a) {
  const uint s = a & 3u;
  if (s == 0u) return bufs[t].w[a >> 2];
  return (bufs[t].w[a >> 2] >> (s * 8u)) | (bufs[t].w[(a >> 2) + 1u] << (32u - s * 8u));
}
float ldf(uint t, uint a) { return uintBitsToFloat(ld32(t, a)); }
// Words w .. w + 3 of source t, loaded together.
uvec4 words4(uint t, uint w) {
  return uvec4(bufs[t].w[w], bufs[t].w[w + 1u], bufs[t].w[w + 2u], bufs[t].w[w + 3u]);
}
int ld_i8(uint t, uint a) { return int(ld8(t, a) << 24) >> 24; }

// Stores into the destination. Sub-word stores go through atomics, because a
// neighbouring element of the same word may belong to another invocation (or lie
// outside the view and must keep its bytes).
void stf(uint a, float v) {
  if ((a & 3u) == 0u) {
    dst.w[a >> 2] = floatBitsToUint(v);
    return;
  }
  const uint u = floatBitsToUint(v);
  for (uint b = 0u; b < 4u; ++b) {
    const uint ab = a + b, sh = (ab & 3u) * 8u;
    atomicAnd(dst.w[ab >> 2], ~(0xFFu << sh));
    atomicOr(dst.w[ab >> 2], ((u >> (b * 8u)) & 0xFFu) << sh);
  }
}
void st8(uint a, uint v) {
  const uint sh = (a & 3u) * 8u;
  atomicAnd(dst.w[a >> 2], ~(0xFFu << sh));
  atomicOr(dst.w[a >> 2], (v & 0xFFu) << sh);
}
void st16(uint a, uint v) {
  if ((a & 1u) != 0u) {
    st8(a, v);
    st8(a + 1u, v >> 8);
    return;
  }
  const uint sh = (a & 2u) * 8u;
  atomicAnd(dst.w[a >> 2], ~(0xFFFFu << sh));
  atomicOr(dst.w[a >> 2], (v & 0xFFFFu) << sh);
}
void sti(uint a, int v) { stf(a, intBitsToFloat(v)); }

// IEEE half <-> float by bits: exact for every code (subnormals, inf, NaN), and
// round-to-nearest-even in the narrowing direction, which the driver's
// pack/unpack built-ins do not promise. The widening takes the three cases
// (normal, subnormal, inf/NaN) each without a branch and selects one (mix with
// a bool is a select): as an if-chain, each weight scale's conversion cut the
// decode products' loop into branches (H200, session 39, GPU span of a decode
// step: llama-8b Q4_K_M 3,390 us against 2,920 with selects, llama-1b Q4_K_M 948
// against 863, llama-1b Q4_0 823 against 802).
float half_to_float(uint h) {
  const uint e = (h >> 10) & 0x1Fu, m = h & 0x3FFu, sign = (h & 0x8000u) << 16;
  const float normal = uintBitsToFloat(sign | (((h & 0x7FFFu) << 13) + 0x38000000u));
  const float sub = uintBitsToFloat(sign | floatBitsToUint(float(m) * (1.0 / 16777216.0)));
  const float special = uintBitsToFloat(sign | 0x7F800000u | (m << 13));
  return mix(mix(normal, sub, e == 0u), special, e == 31u);
}
// The narrowing computes each case (inf/NaN, overflow, subnormal, normal) and
// selects one, as the widening does: it runs in every cache write.
uint float_to_half(float f) {
  const uint u = floatBitsToUint(f), sign = (u >> 16) & 0x8000u;
  const uint a = u & 0x7FFFFFFFu;
  const uint special = 0x7C00u | ((a > 0x7F800000u) ? 0x200u | ((a >> 13) & 0x3FFu) : 0u);
  // Below 2^-14 a subnormal half: 14..24 bits drop; past 31 (below 2^-25) every
  // bit of the mantissa lies under half the dropped range and the code rounds to 0.
  const uint e = a >> 23, ms = (a & 0x7FFFFFu) | 0x800000u;
  const uint shift = clamp(126u - min(e, 112u), 14u, 31u);
  const uint qs = ms >> shift, rs = ms & ((1u << shift) - 1u), hs = 1u << (shift - 1u);
  const uint sub = qs + ((rs > hs || (rs == hs && (qs & 1u) != 0u)) ? 1u : 0u);
  const uint r = a - 0x38000000u;  // rebias 127 -> 15
  const uint q = r >> 13, rem = r & 0x1FFFu;
  const uint normal = q + ((rem > 0x1000u || (rem == 0x1000u && (q & 1u) != 0u)) ? 1u : 0u);
  // 0x477FF000 and up round to 65520 or more: infinity.
  const uint finite = a >= 0x477FF000u ? 0x7C00u : (a < 0x38800000u ? sub : normal);
  return sign | (a >= 0x7F800000u ? special : finite);
}
uint float_to_bf16(float f) {
  const uint u = floatBitsToUint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 64u;  // NaN stays a quiet NaN
  return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

// exp with an error of a few ulp over the whole float range: the driver's exp
// may be off by (3 + 2|x|) ulp (the Vulkan precision table), far over the
// conformance bounds for |x| ~ 10..100.
// Both range ends are selected, not branched to: the decode attention calls it
// per position.
float exp_acc(float x) {
  const float xc = clamp(x, -103.97209f, 88.72284f);
  const float n = floor(xc * 1.44269504f + 0.5f);
  // ln 2 split so that n * LN2_HI is exact for |n| < 2^9.
  precise float r = xc - n * 0.693145752f;
  r = r - n * 1.42860677e-6f;
  // e^r on |r| <= ln2/2: Taylor to degree 7 (truncation < 2e-9 relative).
  precise float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r * r + r;
  p = p + 1.0f;
  // 2^n in two steps so that results in the subnormal range are formed.
  const int ni = int(n);
  const int n1 = ni / 2;
  const float y = p * uintBitsToFloat(uint(n1 + 127) << 23) * uintBitsToFloat(uint(ni - n1 + 127) << 23);
  const float ends = x > 88.72284f ? uintBitsToFloat(0x7F800000u) : 0.0;
  return isnan(x) ? x : (x == xc ? y : ends);
}

// sin and cos of one argument with a 3-part reduction by pi/4 (Cody & Waite),
// accurate to a few ulp for |x| < 8192; the driver's built-ins only promise
// 2^-11 absolute error.
void sincos_acc(float x, out float s, out float c) {
  const float ax = abs(x);
  uint j = uint(ax * 1.27323954f);  // 4/pi
  j += j & 1u;
  const float y = float(j);
  precise float z = ((ax - y * 0.78515625f) - y * 2.4187564849853515625e-4f) -
                    y * 3.77489497744594108e-8f;
  const float zz = z * z;
  precise float ps = ((-1.9515295891e-4f * zz + 8.3321608736e-3f) * zz - 1.6666654611e-1f) * zz * z + z;
  precise float pc_ = ((2.443315711809948e-5f * zz - 1.388731625493765e-3f) * zz +
                       4.166664568298827e-2f) * zz * zz - 0.5f * zz + 1.0f;
  j &= 7u;
  float sv, cv;
  if (j == 0u) { sv = ps; cv = pc_; }
  else if (j == 2u) { sv = pc_; cv = -ps; }
  else if (j == 4u) { sv = -ps; cv = -pc_; }
  else { sv = -pc_; cv = ps; }
  s = x < 0.0 ? -sv : sv;
  c = cv;
}

// tanh through exp_acc, stable for any |x| (the built-in may give inf/inf).
float tanh_acc(float x) {
  const float t = exp_acc(-2.0 * abs(x));
  const float r = (1.0 - t) / (1.0 + t);
  return x < 0.0 ? -r : r;
}

// x · sigmoid(x), formed so that no intermediate is subnormal or infinite
// while the result is a normal float: GPUs flush subnormals, and a divide by a
// denominator above 2^126 may return 0 (NVIDIA's approximate reciprocal), as
// x / (1 + e^-x) did at x = -88 (e^88 ~ 2^127) where silu is -5e-37.
//   x >= 0:        x / (1 + e^-x), e^-x in (0, 1] (flushed to 0 past 87: harmless)
//   -87 <= x < 0:  x·e^x / (1 + e^x), e^x >= e^-87 ~ 1.6e-38 normal, denominator in (1, 2]
//   x < -87:       -e^(x + ln|x|) / (1 + e^x): the numerator is the result itself, so
//                  it is subnormal only when the result is; e^x may flush (1 + 0).
// ln|x| error: at |x| >= 87 the bound's 2^-126 term is >= 1e-3 of the result.
// The three cases are computed and one selected (SWIGLU's blocks call it in
// the products' last subgroups).
float silu_acc(float x) {
  const float e = exp_acc(-abs(x));  // e^-x for x >= 0, e^x below
  const float tail = -exp_acc(x + log(max(-x, 1.0))) / (1.0 + e);
  return x >= 0.0 ? x / (1.0 + e) : (x >= -87.0 ? x * e / (1.0 + e) : tail);
}
