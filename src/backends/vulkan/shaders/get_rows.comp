#version 450
// GET_ROWS: dst[:, i, j] = table[:, ids[i, j]] decoded to F32; one element per invocation.
#include "common.glsl"
#include "dequant.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint WTYPE = 0u;

void main() {
  const uint K = t_ne(T_DST, 0u), n = t_ne(T_DST, 1u), b = t_ne(T_DST, 2u);
  const uint idx = wg_index() * 64u + gl_LocalInvocationID.x;
  if (idx >= K * n * b) return;
  const uint k = idx % K, i = (idx / K) % n, j = idx / (K * n);
  const uint id = uint(int(ld32(T_SRC1, t_off(T_SRC1) + 4u * i + t_nb(T_SRC1, 1u) * j)));
  const uint rows = t_ne(T_SRC0, 1u);
  const uint r = min(id, rows - 1u);  // a guard against bad ids, as the CPU backend clamps
  const float v = dq(T_SRC0, WTYPE, t_off(T_SRC0) + r * t_nb(T_SRC0, 1u), k);
  stf(t_off(T_DST) + 4u * k + i * t_nb(T_DST, 1u) + j * t_nb(T_DST, 2u), v);
}
