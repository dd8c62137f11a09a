// A unit of a weight row decoded to codes and scales, for both kinds of
// activations (unit_dot_f32.glsl, unit_dot_q8.glsl): 32 values of a quantized
// row (one activation block), 8 of an F16 row. The staged products decode
// them from shared memory (staged_units.glsl), mul_mat_vec_direct.comp from
// registers; both through the constructors below, given a block's fields.
// Needs common.glsl, blocks.glsl and WTYPE.

const uint UNIT = WTYPE == 1u ? 8u : 32u;
// What every code stands above: value = d * (code - OFFSET) - m.
const float OFFSET = WTYPE == 2u ? 8.0 : WTYPE == 8u ? 128.0 : WTYPE == 14u ? 32.0 : 0.0;

struct Unit {
  uvec4 q0, q1;  // codes of values 0..15 and 16..31, a byte each (F16: q0 = 8 halves)
  float d0, d1;  // scale of values 0..15 and 16..31
  float m;       // min (Q4_K, Q5_K)
};

// Q4_0: d's 16 bits and the 16 bytes of nibbles (byte l: values l and l + 16).
Unit q4_0_unit(uint d16, uvec4 q) {
  const float d = half_to_float(d16);
  return Unit(q & 0x0F0F0F0Fu, (q >> 4u) & 0x0F0F0F0Fu, d, d, 0.0);
}

// Q4_K or Q5_K sub-block j (without Q5_K's fifth bits): the block's first 16
// bytes (d, dmin | 12 scale bytes) and the 32 bytes of nibbles that j shares
// with j ^ 1 (lo: bytes 0..15, hi: 16..31; j even the low nibbles).
Unit q4_k_unit(uvec4 head, uvec4 lo, uvec4 hi, uint j) {
  const uvec2 sm = kq_scale_min(head.yzw, j);
  const uint sh = 4u * (j % 2u);
  const float d = half_to_float(head.x & 0xFFFFu) * float(sm.x);
  return Unit((lo >> sh) & 0x0F0F0F0Fu, (hi >> sh) & 0x0F0F0F0Fu, d, d,
              half_to_float(head.x >> 16) * float(sm.y));
}

// Q6_K unit j, 32-group j % 4 of half j / 4: the 32 bytes of low nibbles it
// reads (l0: bytes 0..15, l1: 16..31; high nibbles for groups 2, 3), the 32
// bytes of high bits (h0, h1; bits 2 (j % 4)), its two int8 scales in the low
// 16 bits of sc (values 0..15, 16..31) and d.
Unit q6_k_unit(uvec4 l0, uvec4 l1, uvec4 h0, uvec4 h1, uint j, int sc, float d) {
  const uint lsh = 4u * ((j % 4u) / 2u), hsh = 2u * (j % 4u);
  return Unit(((l0 >> lsh) & 0x0F0F0F0Fu) | (((h0 >> hsh) & 0x03030303u) << 4u),
              ((l1 >> lsh) & 0x0F0F0F0Fu) | (((h1 >> hsh) & 0x03030303u) << 4u),
              d * float((sc << 24) >> 24), d * float((sc << 16) >> 24), 0.0);
}
