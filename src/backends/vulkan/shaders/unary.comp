#version 450
// SCALE (mode 0), SILU (1), GELU (2, the tanh approximation): one element per invocation.
#include "common.glsl"
#include "rows.glsl"
layout(local_size_x = 64) in;

void main() {
  const uint idx = wg_index() * 64u + gl_LocalInvocationID.x;
  if (idx >= n_elems(T_DST)) return;
  const uvec4 i = unflat(T_DST, idx);
  const float x = ldf(T_SRC0, elem_addr(T_SRC0, i));
  const uint mode = p_u(0u);
  float y;
  if (mode == 0u) {
    y = x * p_f(0u);
  } else if (mode == 1u) {
    y = silu_acc(x);
  } else {
    const float inner = 0.7978845608f * (x + 0.044715f * x * x * x);
    y = 0.5 * x * (1.0 + tanh_acc(inner));
  }
  stf(elem_addr(T_DST, i), y);
}
