// What the tiled GEMMs (mul_mat_mm.comp, mul_mat_cm.comp) share: which output
// tile a workgroup computes, and the staging of eight consecutive weights of a
// row, decoded to F32 from whole words of their block (blocks.glsl), and of
// eight activations of a column. Needs common.glsl, dequant.glsl, blocks.glsl
// and the specialization constants WTYPE (the weights' GGUF type id) and
// A_VEC4 (columns 16-byte aligned).

// Binding 1 (src0..src3) as 16- and 8-byte pieces for aligned loads.
layout(std430, set = 0, binding = 1) readonly buffer DataV4 { vec4 v[]; } vbufs[4];
layout(std430, set = 0, binding = 1) readonly buffer DataU4 { uvec4 v[]; } u4bufs[4];
layout(std430, set = 0, binding = 1) readonly buffer DataU2 { uvec2 v[]; } u2bufs[4];

// The output tile of this workgroup (tiles of bm weight rows x bn columns,
// rows fastest, then the batches b2, b3): its first row n0 and column m0, and
// the byte addresses of its weight matrix (broadcast over the batches as ggml
// does), activation batch and destination batch. False past the last tile
// (uniform per workgroup).
struct GemmTile {
  uint n0, m0, wbase, abase, dbase;
};
bool gemm_tile(uint bm, uint bn, out GemmTile g) {
  const uint N = t_ne(T_DST, 0u), M = t_ne(T_DST, 1u), B2 = t_ne(T_DST, 2u);
  const uint tiles_n = (N + bm - 1u) / bm, tiles_m = (M + bn - 1u) / bn, o = wg_index();
  if (o >= tiles_n * tiles_m * B2 * t_ne(T_DST, 3u)) return false;
  const uint b2 = (o / (tiles_n * tiles_m)) % B2, b3 = o / (tiles_n * tiles_m * B2);
  const uint r2 = B2 / t_ne(T_SRC0, 2u), r3 = t_ne(T_DST, 3u) / t_ne(T_SRC0, 3u);
  g.n0 = (o % tiles_n) * bm;
  g.m0 = ((o / tiles_n) % tiles_m) * bn;
  g.wbase = t_off(T_SRC0) + (b2 / r2) * t_nb(T_SRC0, 2u) + (b3 / r3) * t_nb(T_SRC0, 3u);
  g.abase = t_off(T_SRC1) + b2 * t_nb(T_SRC1, 2u) + b3 * t_nb(T_SRC1, 3u);
  g.dbase = t_off(T_DST) + b2 * t_nb(T_DST, 2u) + b3 * t_nb(T_DST, 3u);
  return true;
}

// Elements k..k+7 (k a multiple of 8, k + 8 <= K) of the weight row at byte
// address row, in two parts: load8 issues the loads of their block's words,
// unpack8 decodes them, so that a GEMM may do other work while the loads are
// in flight (mul_mat_cm.comp loads its next step before its products). Raw8
// holds what each type loads: a and b as the type's case says, or for the
// types without a whole-word path the values themselves (lo, hi).
struct Raw8 {
  uvec4 a, b;
  vec4 lo, hi;
};

Raw8 load8(uint row, uint k) {
  Raw8 r;
  r.a = uvec4(0u);
  r.b = uvec4(0u);
  r.lo = vec4(0.0);
  r.hi = vec4(0.0);
  if (WTYPE == 0u) {  // F32: a, b the 8 floats' bits
    r.a = ld_16b(row + 4u * k);
    r.b = ld_16b(row + 4u * k + 16u);
  } else if (WTYPE == 1u) {  // F16: a the 8 halves, by one 16-byte load where aligned
    const uint a = row + 2u * k;
    r.a = (a & 15u) == 0u ? u4bufs[T_SRC0].v[a >> 4] : ld_16b(a);
  } else if (WTYPE == 2u) {  // Q4_0: a.x d; b.xy bytes 0..15 hold elements j (low) and j + 16 (high)
    const uint b = row + (k / 32u) * 18u;
    r.a.x = ld16(T_SRC0, b);
    r.b.xy = ld_8b(b + 2u + (k % 32u) % 16u);
  } else if (WTYPE == 8u) {  // Q8_0: a.x d; b.xy the 8 codes
    const uint b = row + (k / 32u) * 34u;
    r.a.x = ld16(T_SRC0, b);
    r.b.xy = ld_8b(b + 2u + k % 32u);
  } else if (WTYPE == 12u || WTYPE == 13u) {  // Q4_K, Q5_K: a the header (d, dmin, scales); b.xy codes, b.zw Q5_K's fifth bits
    const bool q5 = WTYPE == 13u;
    const uint b = row + (k / 256u) * (q5 ? 176u : 144u), e = k % 256u;
    const uint qa = b + (q5 ? 48u : 16u) + (e / 64u) * 32u + e % 32u;
    // A Q4_K row at a 16-byte aligned address has every block (144 bytes) so
    // aligned: its header (d, dmin, the 12 scale bytes) is one 16-byte load and
    // the 8 code bytes one 8-byte load.
    const bool wide = !q5 && (row & 15u) == 0u;
    r.a = wide ? u4bufs[T_SRC0].v[b >> 4] : uvec4(ld16(T_SRC0, b) | (ld16(T_SRC0, b + 2u) << 16), kq_scales(b));
    r.b.xy = wide ? u2bufs[T_SRC0].v[qa >> 3] : ld_8b(qa);
    if (q5) r.b.zw = ld_8b(b + 16u + e % 32u);
  } else if (WTYPE == 14u) {  // Q6_K: a.x d, a.y the 8-bit scale; b.xy low nibbles, b.zw high bits
    const uint b = row + (k / 256u) * 210u, e = k % 256u, h = e / 128u, g = (e % 128u) / 32u;
    r.a.x = ld16(T_SRC0, b + 208u);
    r.a.y = uint(ld_i8(T_SRC0, b + 192u + e / 16u));
    r.b.xy = ld_8b(b + 64u * h + 32u * (g % 2u) + e % 32u);
    r.b.zw = ld_8b(b + 128u + 32u * h + e % 32u);
  } else {
    r.lo = vec4(dq(T_SRC0, WTYPE, row, k), dq(T_SRC0, WTYPE, row, k + 1u), dq(T_SRC0, WTYPE, row, k + 2u),
                dq(T_SRC0, WTYPE, row, k + 3u));
    r.hi = vec4(dq(T_SRC0, WTYPE, row, k + 4u), dq(T_SRC0, WTYPE, row, k + 5u), dq(T_SRC0, WTYPE, row, k + 6u),
                dq(T_SRC0, WTYPE, row, k + 7u));
  }
  return r;
}

void unpack8(Raw8 r, uint k, out vec4 lo, out vec4 hi) {
  if (WTYPE == 0u) {
    lo = uintBitsToFloat(r.a);
    hi = uintBitsToFloat(r.b);
  } else if (WTYPE == 1u) {
    halves8(r.a, lo, hi);
  } else if (WTYPE == 2u) {
    const float d = half_to_float(r.a.x);
    const bool low = k % 32u < 16u;
    lo = d * ((low ? nib_lo(r.b.x) : nib_hi(r.b.x)) - 8.0);
    hi = d * ((low ? nib_lo(r.b.y) : nib_hi(r.b.y)) - 8.0);
  } else if (WTYPE == 8u) {
    const float d = half_to_float(r.a.x);
    lo = d * bytes_i(r.b.x);
    hi = d * bytes_i(r.b.y);
  } else if (WTYPE == 12u || WTYPE == 13u) {  // sub-block j = e / 32
    const uint j = (k % 256u) / 32u;
    const uvec2 sm = kq_scale_min(r.a.yzw, j);
    const float dl = half_to_float(r.a.x & 0xFFFFu) * float(sm.x);
    const float ml = half_to_float(r.a.x >> 16) * float(sm.y);
    vec4 ql = (j % 2u) == 0u ? nib_lo(r.b.x) : nib_hi(r.b.x);
    vec4 qh = (j % 2u) == 0u ? nib_lo(r.b.y) : nib_hi(r.b.y);
    if (WTYPE == 13u) {
      ql += bit_x16(r.b.z, j);
      qh += bit_x16(r.b.w, j);
    }
    lo = dl * ql - ml;
    hi = dl * qh - ml;
  } else if (WTYPE == 14u) {  // group g of 32 within its half
    const uint g = ((k % 256u) % 128u) / 32u;
    const float dl = half_to_float(r.a.x) * float(int(r.a.y));
    lo = dl * ((g < 2u ? nib_lo(r.b.x) : nib_hi(r.b.x)) + two_x16(r.b.z, 2u * g) - 32.0);
    hi = dl * ((g < 2u ? nib_lo(r.b.y) : nib_hi(r.b.y)) + two_x16(r.b.w, 2u * g) - 32.0);
  } else {
    lo = r.lo;
    hi = r.hi;
  }
}

void decode8(uint row, uint k, out vec4 lo, out vec4 hi) { unpack8(load8(row, k), k, lo, hi); }

// Weights k..k+7 of the row at byte address wrow, zeros past K: the ragged end
// of a plain-type row goes element by element.
void weights8(uint wrow, uint k, uint K, out vec4 lo, out vec4 hi) {
  if (k + 8u <= K) {
    decode8(wrow, k, lo, hi);
    return;
  }
  lo = vec4(0.0);
  hi = vec4(0.0);
  for (uint e = 0u; e < 8u && k + e < K; ++e) {
    const float v = dq(T_SRC0, WTYPE, wrow, k + e);
    if (e < 4u) lo[e] = v; else hi[e - 4u] = v;
  }
}

// Activations k..k+7 of the column at byte address acol, zeros past K and for
// a column past the matrix (!col_in).
void acts8(uint acol, bool col_in, uint k, uint K, out vec4 lo, out vec4 hi) {
  lo = vec4(0.0);
  hi = vec4(0.0);
  if (!col_in) return;
  if (k + 8u <= K && A_VEC4) {
    lo = vbufs[T_SRC1].v[(acol + 4u * k) >> 4];
    hi = vbufs[T_SRC1].v[(acol + 4u * k + 16u) >> 4];
  } else if (k + 8u <= K) {
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      lo[e] = ldf(T_SRC1, acol + 4u * (k + e));
      hi[e] = ldf(T_SRC1, acol + 4u * (k + 4u + e));
    }
  } else {
    for (uint e = 0u; e < 8u && k + e < K; ++e) {
      const float v = ldf(T_SRC1, acol + 4u * (k + e));
      if (e < 4u) lo[e] = v; else hi[e - 4u] = v;
    }
  }
}
