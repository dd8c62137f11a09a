#version 450
// ADD (mode 0), MUL (1) with src1 broadcast per dim, SWIGLU (2) of two
// same-shape tensors: one element per invocation.
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 64) in;

void main() {
  const uint idx = wg_index() * 64u + gl_LocalInvocationID.x;
  if (idx >= n_elems(T_DST)) return;
  const uvec4 i = unflat(T_DST, idx);
  const uvec4 n1 = uvec4(t_ne(T_SRC1, 0u), t_ne(T_SRC1, 1u), t_ne(T_SRC1, 2u), t_ne(T_SRC1, 3u));
  const float a = ldf(T_SRC0, elem_addr(T_SRC0, i));
  const float b = ldf(T_SRC1, elem_addr(T_SRC1, i % n1));
  const uint mode = p_u(0u);
  float y;
  if (mode == 0u) y = a + b;
  else if (mode == 1u) y = a * b;
  else y = silu_acc(a) * b;
  stf(elem_addr(T_DST, i), y);
}
