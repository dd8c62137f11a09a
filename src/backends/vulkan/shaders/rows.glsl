// Row addressing for the per-row shaders: flat row r of tensor t to the byte
// address of its first element.
uint row_addr(uint t, uint r) {
  const uint n1 = t_ne(t, 1u), n2 = t_ne(t, 2u);
  return t_off(t) + (r % n1) * t_nb(t, 1u) + ((r / n1) % n2) * t_nb(t, 2u) +
         (r / (n1 * n2)) * t_nb(t, 3u);
}
uint n_rows(uint t) { return t_ne(t, 1u) * t_ne(t, 2u) * t_ne(t, 3u); }

// Element address of (i0, i1, i2, i3) of tensor t.
uint elem_addr(uint t, uvec4 i) {
  return t_off(t) + i.x * t_nb(t, 0u) + i.y * t_nb(t, 1u) + i.z * t_nb(t, 2u) + i.w * t_nb(t, 3u);
}
uvec4 unflat(uint t, uint idx) {
  const uint n0 = t_ne(t, 0u), n1 = t_ne(t, 1u), n2 = t_ne(t, 2u);
  return uvec4(idx % n0, (idx / n0) % n1, (idx / (n0 * n1)) % n2, idx / (n0 * n1 * n2));
}
uint n_elems(uint t) { return t_ne(t, 0u) * n_rows(t); }

shared float red[64];
// Sum over the workgroup of one value per invocation; every invocation gets it.
float wg_sum(float v) {
  red[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (gl_LocalInvocationID.x < s) red[gl_LocalInvocationID.x] += red[gl_LocalInvocationID.x + s];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}
float wg_max(float v) {
  red[gl_LocalInvocationID.x] = v;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (gl_LocalInvocationID.x < s)
      red[gl_LocalInvocationID.x] = max(red[gl_LocalInvocationID.x], red[gl_LocalInvocationID.x + s]);
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}
