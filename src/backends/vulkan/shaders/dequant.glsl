// Element k of a row of any weight type, decoded to F32 straight from the
// stored block layout (include/polyinfer/quant_blocks.hpp, byte for byte).
// `type` is a GGUF type id; shaders pass a specialization constant, so the
// driver folds the switch away.
float dq_half(uint t, uint a) { return half_to_float(ld16(t, a)); }

// Q4_K/Q5_K: the 6-bit scale (x) and min (y) of sub-block j of the 12 packed bytes at a.
uvec2 k4_scale_min(uint t, uint a, uint j) {
  if (j < 4u) return uvec2(ld8(t, a + j) & 63u, ld8(t, a + j + 4u) & 63u);
  return uvec2((ld8(t, a + j + 4u) & 0xFu) | ((ld8(t, a + j - 4u) >> 6) << 4),
               (ld8(t, a + j + 4u) >> 4) | ((ld8(t, a + j) >> 6) << 4));
}
// Q2_K/Q3_K/Q6_K store 2-bit codes four to a byte (element e: byte (e/128)*32 + e%32).
uint two_bit(uint t, uint a, uint e) {
  return (ld8(t, a + (e / 128u) * 32u + e % 32u) >> (2u * ((e % 128u) / 32u))) & 3u;
}

float dq(uint t, uint type, uint row, uint k) {
  switch (type) {
    case 0u: return ldf(t, row + 4u * k);                             // F32
    case 1u: return dq_half(t, row + 2u * k);                         // F16
    case 30u: return uintBitsToFloat(ld16(t, row + 2u * k) << 16);    // BF16
    case 2u: {                                                        // Q4_0
      const uint b = row + (k / 32u) * 18u, j = k % 32u;
      const uint q = (ld8(t, b + 2u + j % 16u) >> (j < 16u ? 0u : 4u)) & 0xFu;
      return dq_half(t, b) * float(int(q) - 8);
    }
    case 3u: {                                                        // Q4_1
      const uint b = row + (k / 32u) * 20u, j = k % 32u;
      const uint q = (ld8(t, b + 4u + j % 16u) >> (j < 16u ? 0u : 4u)) & 0xFu;
      return dq_half(t, b) * float(q) + dq_half(t, b + 2u);
    }
    case 6u: {                                                        // Q5_0
      const uint b = row + (k / 32u) * 22u, j = k % 32u;
      const uint lo = (ld8(t, b + 6u + j % 16u) >> (j < 16u ? 0u : 4u)) & 0xFu;
      const uint hi = (ld8(t, b + 2u + j / 8u) >> (j % 8u)) & 1u;
      return dq_half(t, b) * float(int(lo | (hi << 4)) - 16);
    }
    case 7u: {                                                        // Q5_1
      const uint b = row + (k / 32u) * 24u, j = k % 32u;
      const uint lo = (ld8(t, b + 8u + j % 16u) >> (j < 16u ? 0u : 4u)) & 0xFu;
      const uint hi = (ld8(t, b + 4u + j / 8u) >> (j % 8u)) & 1u;
      return dq_half(t, b) * float(lo | (hi << 4)) + dq_half(t, b + 2u);
    }
    case 8u: {                                                        // Q8_0
      const uint b = row + (k / 32u) * 34u;
      return dq_half(t, b) * float(ld_i8(t, b + 2u + k % 32u));
    }
    case 10u: {                                                       // Q2_K
      const uint b = row + (k / 256u) * 84u, e = k % 256u;
      const uint sc = ld8(t, b + e / 16u);
      const float dl = dq_half(t, b + 80u) * float(sc & 0xFu);
      const float ml = dq_half(t, b + 82u) * float(sc >> 4);
      return dl * float(two_bit(t, b + 16u, e)) - ml;
    }
    case 11u: {                                                       // Q3_K
      const uint b = row + (k / 256u) * 110u, e = k % 256u, g = e / 16u;
      const uint lo = g < 8u ? (ld8(t, b + 96u + g) & 0xFu) : (ld8(t, b + 96u + g - 8u) >> 4);
      const uint hi = (ld8(t, b + 96u + 8u + g % 4u) >> (2u * (g / 4u))) & 3u;
      const float dl = dq_half(t, b + 108u) * float(int(lo | (hi << 4)) - 32);
      const uint hbit = (ld8(t, b + e % 32u) >> (e / 32u)) & 1u;
      return dl * float(int(two_bit(t, b + 32u, e)) - (hbit != 0u ? 0 : 4));
    }
    case 12u:                                                         // Q4_K
    case 13u: {                                                       // Q5_K
      const uint bs = type == 12u ? 144u : 176u, qs = type == 12u ? 16u : 48u;
      const uint b = row + (k / 256u) * bs, e = k % 256u;
      const uvec2 sm = k4_scale_min(t, b + 4u, e / 32u);
      uint q = (ld8(t, b + qs + (e / 64u) * 32u + e % 32u) >> (4u * ((e / 32u) % 2u))) & 0xFu;
      if (type == 13u) q |= ((ld8(t, b + 16u + e % 32u) >> (e / 32u)) & 1u) << 4;
      const float dl = dq_half(t, b) * float(sm.x), ml = dq_half(t, b + 2u) * float(sm.y);
      return dl * float(q) - ml;
    }
    case 14u: {                                                       // Q6_K
      const uint b = row + (k / 256u) * 210u, e = k % 256u;
      const uint lo = (ld8(t, b + (e / 128u) * 64u + e % 64u) >> (4u * ((e % 128u) / 64u))) & 0xFu;
      const int q = int(lo | (two_bit(t, b + 128u, e) << 4)) - 32;
      return dq_half(t, b + 208u) * float(ld_i8(t, b + 192u + e / 16u)) * float(q);
    }
  }
  return uintBitsToFloat(0x7FC00000u);  // unreachable: supports() refused other types
}
