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
    w = q4_0_unit(s32(blk) & 0xFFFFu, s128(blk + 2u));
  } else if (WTYPE == 8u) {
    // A signed byte with its sign bit flipped is its value plus 128.
    const uint blk = b + 34u * u;
    w.q0 = s128(blk + 2u) ^ 0x80808080u;
    w.q1 = s128(blk + 18u) ^ 0x80808080u;
    w.d0 = w.d1 = s_half(blk);
  } else if (WTYPE == 12u || WTYPE == 13u) {
    const bool q5 = WTYPE == 13u;
    const uint j = u % 8u, blk = b + (u / 8u) * (q5 ? 176u : 144u);
    const uint qa = blk + (q5 ? 48u : 16u) + 32u * (j / 2u);
    w = q4_k_unit(s128(blk), s128(qa), s128(qa + 16u), j);
    if (q5) {
      w.q0 |= ((s128(blk + 16u) >> j) & 0x01010101u) << 4u;
      w.q1 |= ((s128(blk + 32u) >> j) & 0x01010101u) << 4u;
    }
  } else if (WTYPE == 14u) {
    // Low nibbles from byte 64 (j / 4) + 32 (j % 2), high bits from byte
    // 128 + 32 (j / 4); scales 2j and 2j + 1.
    const uint j = u % 8u, blk = b + (u / 8u) * 210u;
    const uint la = blk + 64u * (j / 4u) + 32u * (j % 2u), ha = blk + 128u + 32u * (j / 4u);
    w = q6_k_unit(s128(la), s128(la + 16u), s128(ha), s128(ha + 16u), j,
                  int(s32(blk + 192u + 2u * j)), s_half(blk + 208u));
  }
  return w;
}
