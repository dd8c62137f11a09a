#version 450
// FLASH_ATTN: one workgroup per (query token t, head h). K/V are walked in
// tiles of 64 positions: invocation j scores position j of the tile, then the
// online softmax (running max m, running sum l) rescales the accumulator, of
// which each invocation owns dims d = lane + 64·r (D <= 256).
#include "common.glsl"
#include "dequant.glsl"
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint KVTYPE = 0u;

shared float qv[256];
shared float sp[64];

void main() {
  const uint D = t_ne(T_SRC0, 0u), T = t_ne(T_SRC0, 1u), H = t_ne(T_SRC0, 2u);
  const uint o = wg_index();
  if (o >= T * H) return;
  const uint t = o % T, h = o / T, lane = gl_LocalInvocationID.x;
  const uint n_kv = t_ne(T_SRC1, 1u), hkv = h / (H / t_ne(T_SRC1, 2u));
  const uint q = t_off(T_SRC0) + t * t_nb(T_SRC0, 1u) + h * t_nb(T_SRC0, 2u);
  for (uint d = lane; d < D; d += 64u) qv[d] = ldf(T_SRC0, q + 4u * d);
  const bool masked = p_u(0u) != 0u;
  const uint mrow = masked ? t_off(T_SRC3) + t * t_nb(T_SRC3, 1u) : 0u;
  const uint kbase = t_off(T_SRC1) + hkv * t_nb(T_SRC1, 2u);
  const uint vbase = t_off(T_SRC2) + hkv * t_nb(T_SRC2, 2u);
  const float scale = p_f(0u), neg_inf = uintBitsToFloat(0xFF800000u);
  barrier();

  float m = neg_inf, l = 0.0;
  float acc[4] = float[4](0.0, 0.0, 0.0, 0.0);
  for (uint j0 = 0u; j0 < n_kv; j0 += 64u) {
    const uint j = j0 + lane;
    float s = neg_inf;
    if (j < n_kv) {
      const float mk = masked ? ldf(T_SRC3, mrow + 4u * j) : 0.0;
      if (!(isinf(mk) && mk < 0.0)) {
        const uint krow = kbase + j * t_nb(T_SRC1, 1u);
        float dot = 0.0;
        for (uint d = 0u; d < D; ++d) dot += qv[d] * dq(T_SRC1, KVTYPE, krow, d);
        s = scale * dot + mk;
      }
    }
    sp[lane] = s;
    barrier();
    float tile_max = neg_inf;
    for (uint i = 0u; i < 64u; ++i) tile_max = max(tile_max, sp[i]);
    const float m_new = max(m, tile_max);
    barrier();
    if (!(isinf(m_new) && m_new < 0.0)) {
      sp[lane] = (isinf(s) && s < 0.0) ? 0.0 : exp_acc(s - m_new);
      const float corr = (isinf(m) && m < 0.0) ? 0.0 : exp_acc(m - m_new);
      barrier();
      float psum = 0.0;
      const uint n_tile = min(64u, n_kv - j0);
      for (uint i = 0u; i < n_tile; ++i) psum += sp[i];
      l = l * corr + psum;
      [[unroll]] for (uint r = 0u; r < 4u; ++r) {
        const uint d = lane + 64u * r;
        if (d < D) {
          float a = acc[r] * corr;
          for (uint i = 0u; i < n_tile; ++i) {
            if (sp[i] != 0.0) a += sp[i] * dq(T_SRC2, KVTYPE, vbase + (j0 + i) * t_nb(T_SRC2, 1u), d);
          }
          acc[r] = a;
        }
      }
      m = m_new;
    }
    barrier();
  }
  const uint y = t_off(T_DST) + h * t_nb(T_DST, 1u) + t * t_nb(T_DST, 2u);
  const float inv = l > 0.0 ? 1.0 / l : 0.0;
  [[unroll]] for (uint r = 0u; r < 4u; ++r) {
    const uint d = lane + 64u * r;
    if (d < D) stf(y + 4u * d, acc[r] * inv);
  }
}
