// src1's F32 activations 16 bytes at a time for the matrix-vector kernels
// (mul_mat_vec_staged.comp, mul_mat_vec_f16.comp): as one vec4 load when every
// column starts 16-byte aligned in its binding (A_VEC4, a specialization
// constant the host sets: vk_graph_plan.cpp), else as four word loads. Needs
// common.glsl and A_VEC4.

layout(std430, set = 0, binding = 1) readonly buffer DataV4 { vec4 v[]; } vbufs[4];

// Activations at byte a .. a + 15 of src1.
vec4 act4(uint a) {
  if (A_VEC4) return vbufs[T_SRC1].v[a >> 4];
  return vec4(ldf(T_SRC1, a), ldf(T_SRC1, a + 4u), ldf(T_SRC1, a + 8u), ldf(T_SRC1, a + 12u));
}
