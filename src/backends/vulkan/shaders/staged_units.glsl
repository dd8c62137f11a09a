// A unit (unit.glsl) of a staged weight row (staged_rows.glsl) decoded to
// codes and scales.
// Layouts as include/polyinfer/quant_blocks.hpp: Q4_0 d, 16 bytes of nibbles
// (byte l: values l and l + 16); Q8_0 d, 32 signed bytes; Q4_K/Q5_K d, dmin,
// 12 bytes of 6-bit scales and mins, (Q5_K: 32 bytes of fifth bits), 128
// bytes of nibbles shared by sub-blocks 2p and 2p + 1 (low, high); Q6_K 128
// bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales (one per 16
// values), d.

#include "unit.glsl"

// Unit u of a row segment staged at byte b.
Unit staged_unit(uint b, uint u) {
  Unit w = Unit(uvec4(0u), uvec4(0u), 0.0, 0.0, 0.0);
  if (WTYPE == 1u) {
    w.q0 = s128(b + 16u * u);
  } else if (WTYPE == 2u) {
    const uint blk = b + 18u * u;
    const uvec4 q = s128(blk + 2u);
    w.q0 = q & 0x0F0F0F0Fu;
    w.q1 = (q >> 4u) & 0x0F0F0F0Fu;
    w.d0 = w.d1 = s_half(blk);
  } else if (WTYPE == 8u) {
    // A signed byte with its sign bit flipped is its value plus 128.
    const uint blk = b + 34u * u;
    w.q0 = s128(blk + 2u) ^ 0x80808080u;
    w.q1 = s128(blk + 18u) ^ 0x80808080u;
    w.d0 = w.d1 = s_half(blk);
  } else if (WTYPE == 12u || WTYPE == 13u) {
    const bool q5 = WTYPE == 13u;
    const uint j = u % 8u, blk = b + (u / 8u) * (q5 ? 176u : 144u);
    const uvec4 head = s128(blk);  // d, dmin | 12 scale bytes
    const uvec2 sm = kq_scale_min(head.yzw, j);
    const uint qa = blk + (q5 ? 48u : 16u) + 32u * (j / 2u), sh = 4u * (j % 2u);
    w.q0 = (s128(qa) >> sh) & 0x0F0F0F0Fu;
    w.q1 = (s128(qa + 16u) >> sh) & 0x0F0F0F0Fu;
    if (q5) {
      w.q0 |= ((s128(blk + 16u) >> j) & 0x01010101u) << 4u;
      w.q1 |= ((s128(blk + 32u) >> j) & 0x01010101u) << 4u;
    }
    w.d0 = w.d1 = half_to_float(head.x & 0xFFFFu) * float(sm.x);
    w.m = half_to_float(head.x >> 16) * float(sm.y);
  } else if (WTYPE == 14u) {
    // Unit j is 32-group j % 4 of half j / 4: low nibbles from byte
    // 64 (j / 4) + 32 (j % 2) + l (high nibbles for groups 2, 3), two high
    // bits 2 (j % 4) of byte 128 + 32 (j / 4) + l; scales 2j and 2j + 1.
    const uint j = u % 8u, blk = b + (u / 8u) * 210u;
    const uint la = blk + 64u * (j / 4u) + 32u * (j % 2u), lsh = 4u * ((j % 4u) / 2u);
    const uint ha = blk + 128u + 32u * (j / 4u), hsh = 2u * (j % 4u);
    w.q0 = ((s128(la) >> lsh) & 0x0F0F0F0Fu) | (((s128(ha) >> hsh) & 0x03030303u) << 4u);
    w.q1 = ((s128(la + 16u) >> lsh) & 0x0F0F0F0Fu) | (((s128(ha + 16u) >> hsh) & 0x03030303u) << 4u);
    const int sc = int(s32(blk + 192u + 2u * j));
    const float d = s_half(blk + 208u);
    w.d0 = d * float((sc << 24) >> 24);
    w.d1 = d * float((sc << 16) >> 24);
  }
  return w;
}
