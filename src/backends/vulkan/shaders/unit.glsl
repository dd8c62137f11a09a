// A unit of a weight row decoded to codes and scales, for both kinds of
// activations (unit_dot_f32.glsl, unit_dot_q8.glsl): 32 values of a quantized
// row (one activation block), 8 of an F16 row. The staged products decode
// them from shared memory (staged_units.glsl), mul_mat_vec_direct.comp from
// registers. Needs WTYPE.

const uint UNIT = WTYPE == 1u ? 8u : 32u;
// What every code stands above: value = d * (code - OFFSET) - m.
const float OFFSET = WTYPE == 2u ? 8.0 : WTYPE == 8u ? 128.0 : WTYPE == 14u ? 32.0 : 0.0;

struct Unit {
  uvec4 q0, q1;  // codes of values 0..15 and 16..31, a byte each (F16: q0 = 8 halves)
  float d0, d1;  // scale of values 0..15 and 16..31
  float m;       // min (Q4_K, Q5_K)
};
