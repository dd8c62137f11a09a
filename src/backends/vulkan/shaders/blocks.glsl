// Whole-block reads of the weight formats for the matrix kernels: several
// 32-bit words per load instead of one byte per element (dequant.glsl), the
// bytes unpacked four at a time. Needs common.glsl; reads src0 (the weights).

uint wword(uint i) { return bufs[T_SRC0].w[i]; }
// The word after the last one a load needs when it is aligned: clamped to the
// binding, since an aligned load at the very end would otherwise read past it.
uint wword_next(uint i) { return bufs[T_SRC0].w[min(i, uint(bufs[T_SRC0].w.length()) - 1u)]; }
// lo >> s joined with the low bits of hi above it (s = 0..24): hi is shifted in
// two steps so that s = 0 gives 0 and not a shift by 32 (undefined). Branch-free,
// because a CPU driver (lavapipe) would run both sides of a per-invocation branch.
uvec4 funnel(uvec4 lo, uvec4 hi, uint s) { return (lo >> s) | ((hi << 1u) << (31u - s)); }

// The 16 bytes at byte address a (any alignment) as 4 little-endian words: 5
// aligned word loads and a funnel shift. Block formats put fields at every
// alignment (18-, 34-, 210-byte blocks), so this is the one wide load.
uvec4 ld_16b(uint a) {
  const uint i = a >> 2;
  const uvec4 r = uvec4(wword(i), wword(i + 1u), wword(i + 2u), wword(i + 3u));
  return funnel(r, uvec4(r.yzw, wword_next(i + 4u)), (a & 3u) * 8u);
}
// The 8 bytes at byte address a (any alignment) as 2 words.
uvec2 ld_8b(uint a) {
  const uint i = a >> 2;
  const uvec2 r = uvec2(wword(i), wword(i + 1u));
  return funnel(uvec4(r, 0u, 0u), uvec4(r.y, wword_next(i + 2u), 0u, 0u), (a & 3u) * 8u).xy;
}

// The four bytes of w, unsigned, as floats (byte 0 first); then nibbles and
// signed bytes. All exact: small integers.
vec4 bytes_u(uint w) { return vec4(uvec4(w, w >> 8, w >> 16, w >> 24) & 0xFFu); }
vec4 nib_lo(uint w) { return vec4(uvec4(w, w >> 8, w >> 16, w >> 24) & 0xFu); }
vec4 nib_hi(uint w) { return vec4(uvec4(w >> 4, w >> 12, w >> 20, w >> 28) & 0xFu); }
vec4 bytes_i(uint w) {
  const int v = int(w);
  return vec4(ivec4(v << 24, v << 16, v << 8, v) >> 24);
}
// Bit `bit` of each byte of w (Q5_K's fifth bit), times 16.
vec4 bit_x16(uint w, uint bit) { return vec4(uvec4(w >> bit, w >> (bit + 8u), w >> (bit + 16u), w >> (bit + 24u)) & 1u) * 16.0; }
// The 2-bit field at `sh` of each byte of w (Q6_K's high bits), times 16.
vec4 two_x16(uint w, uint sh) { return vec4(uvec4(w >> sh, w >> (sh + 8u), w >> (sh + 16u), w >> (sh + 24u)) & 3u) * 16.0; }

// The 8 halves of h (element 0 in the low half of h.x) as floats, exactly.
void halves8(uvec4 h, out vec4 lo, out vec4 hi) {
  lo = vec4(half_to_float(h.x & 0xFFFFu), half_to_float(h.x >> 16), half_to_float(h.y & 0xFFFFu),
            half_to_float(h.y >> 16));
  hi = vec4(half_to_float(h.z & 0xFFFFu), half_to_float(h.z >> 16), half_to_float(h.w & 0xFFFFu),
            half_to_float(h.w >> 16));
}

// Q4_K/Q5_K: 6-bit scale (x) and min (y) of sub-block j from the 12 scale bytes
// (llama.cpp's get_scale_min_k4). Byte j % 4 of each of the three words holds
// what sub-blocks j % 4 and j % 4 + 4 need, so the three bytes come out by one
// shift each and j < 4 picks between the two layouts without a branch (indexing
// the words by j / 4 had made llama-1b Q4_K_M's decode step 1,027 us on the
// H200 against 958, llama-8b Q4_K_M's 3,467-3,485 against 3,411: session 39).
uvec2 kq_scale_min(uvec3 s, uint j) {
  const uvec3 x = (s >> (8u * (j % 4u))) & 0xFFu;
  const uvec2 lo = uvec2(x.x, x.y) & 63u;
  const uvec2 hi = uvec2((x.z & 0xFu) | ((x.x >> 6) << 4), (x.z >> 4) | ((x.y >> 6) << 4));
  return j < 4u ? lo : hi;
}
uvec3 kq_scales(uint b) { return uvec3(ld32(T_SRC0, b + 4u), ld32(T_SRC0, b + 8u), ld32(T_SRC0, b + 12u)); }
