// Float activations for mul_mat_vec_staged.comp (devices without integer dot
// products, and Q8_0 and F16 rows everywhere): a unit's activations of one
// column as vec4s, read from src1 once per workgroup and dotted with every
// staged row. Needs staged_units.glsl, act4() and acol[].

struct Act {
  vec4 x[8];  // the unit's values in order (F16: x[0], x[1])
  float sum;  // Σ x, for the mins of Q4_K and Q5_K
};

Act load_act(uint c, uint k0, uint u) {
  Act a;
  a.sum = 0.0;
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    a.x[j] = vec4(0.0);
    if (j < UNIT / 4u) a.x[j] = act4(acol[c] + 4u * (k0 + UNIT * u + 4u * j));
    if (WTYPE == 12u || WTYPE == 13u) a.sum += dot(a.x[j], vec4(1.0));
  }
  return a;
}

// The four bytes of w as floats minus OFFSET, exactly: a byte OR-ed into the
// mantissa of 2^23 is 2^23 + byte with one logic op (an int-to-float
// conversion runs at a quarter of the FMA rate on NVIDIA), and one add takes
// off 2^23 and the offset.
vec4 codes_f(uint w) {
  const vec4 v = uintBitsToFloat((uvec4(w, w >> 8, w >> 16, w >> 24) & 0xFFu) | 0x4B000000u);
  return v - (8388608.0 + OFFSET);
}

float unit_dot(Unit w, Act a) {
  if (WTYPE == 1u) {
    vec4 lo, hi;
    halves8(w.q0, lo, hi);
    return dot(lo, a.x[0]) + dot(hi, a.x[1]);
  }
  float s0 = 0.0, s1 = 0.0;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    s0 += dot(codes_f(w.q0[i]), a.x[i]);
    s1 += dot(codes_f(w.q1[i]), a.x[4u + i]);
  }
  return w.d0 * s0 + w.d1 * s1 - w.m * a.sum;
}
