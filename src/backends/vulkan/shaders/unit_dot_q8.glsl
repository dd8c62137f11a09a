// 8-bit activations for mul_mat_vec_staged.comp on devices with integer dot
// products (VK_KHR_shader_integer_dot_product), for Q4_0, Q4_K, Q5_K and Q6_K
// rows: each workgroup quantizes the segment's activations to blocks of 32
// codes in shared memory (as the CUDA kernel's quantize pass: d = amax / 127
// in float32, codes round(x / d)), and a unit of 32 weights is dotted with
// its block by 8 packed 4 x 8-bit dot products; the weights' offsets and
// mins go through the sums of the codes. Quantizing in every workgroup reads
// what float activations would read (each column once per workgroup) and
// costs no dispatch and no barrier, which a separate pass would. Q8_0 keeps
// float activations: 8-bit codes flipped a model oracle on the CPU and CUDA.
// Needs staged_units.glsl, act4(), acol[], NCOLS, SEG, WG.
#extension GL_EXT_spirv_intrinsics : require

// OpSDot (SPV_KHR_integer_dot_product) of two words as 4 x 8-bit signed
// vectors (packed_format 0: PackedVectorFormat4x8Bit), with the int operands
// glslang gives GL_EXT_integer_dot_product's dotPacked4x8EXT, which glslang 11
// lacks, so the instruction is named directly.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450)
int sdot4x8(int a, int b, spirv_literal int packed_format);
int sdot(uint a, uint b) { return sdot4x8(int(a), int(b), 0); }

const uint SEG_BLOCKS = SEG / 32u;
// Column c's block i: 32 codes at act_codes[2 (c SEG_BLOCKS + i)] and the next;
// d's bits and the sums of codes 0..15 and 16..31 (16 bits each) at act_meta[c SEG_BLOCKS + i].
shared uvec4 act_codes[NCOLS * SEG_BLOCKS * 2u];
shared uvec2 act_meta[NCOLS * SEG_BLOCKS];

// Four values already divided by d (|v| <= 127) rounded to signed bytes:
// adding 1.5 * 2^23 leaves round(v) in the low mantissa bits, two's
// complement in the low byte.
uint codes4(vec4 v) {
  const uvec4 b = floatBitsToUint(v + 12582912.0) & 0xFFu;
  return b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
}

// Activations [k0, k0 + len) of every column to codes, a block per invocation.
void quantize_segment(uint k0, uint len) {
  const uint nb = len / 32u;
  for (uint task = gl_LocalInvocationID.x; task < NCOLS * nb; task += WG) {
    const uint c = task / nb, blk = task % nb;
    vec4 x[8];
    float amax = 0.0;
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      x[j] = act4(acol[c] + 4u * (k0 + 32u * blk + 4u * j));
      const vec4 m = abs(x[j]);
      amax = max(amax, max(max(m.x, m.y), max(m.z, m.w)));
    }
    const float id = amax > 0.0 ? 127.0 / amax : 0.0;
    uint q[8];
    int s0 = 0, s1 = 0;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      q[j] = codes4(x[j] * id);
      q[4u + j] = codes4(x[4u + j] * id);
      s0 += sdot(q[j], 0x01010101u);
      s1 += sdot(q[4u + j], 0x01010101u);
    }
    const uint i = c * SEG_BLOCKS + blk;
    act_codes[2u * i] = uvec4(q[0], q[1], q[2], q[3]);
    act_codes[2u * i + 1u] = uvec4(q[4], q[5], q[6], q[7]);
    act_meta[i] = uvec2(floatBitsToUint(amax / 127.0), (uint(s0) & 0xFFFFu) | (uint(s1) << 16));
  }
}

struct Act {
  uvec4 q0, q1;  // codes of values 0..15 and 16..31
  float d;
  int s0, s1;  // Σ codes of values 0..15 and 16..31
};

// Unit u (one activation block) of column c; k0 is implied by the segment.
Act load_act(uint c, uint k0, uint u) {
  const uint i = c * SEG_BLOCKS + u;
  const uvec2 m = act_meta[i];
  return Act(act_codes[2u * i], act_codes[2u * i + 1u], uintBitsToFloat(m.x), int(m.y << 16) >> 16,
             int(m.y) >> 16);
}

// Weight codes are dotted as stored (0..15, 0..31, 0..63: valid signed
// bytes), Σ (q - o) x as Σ q x - o Σ x.
float unit_dot(Unit w, Act a) {
  int s0 = 0, s1 = 0;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    s0 += sdot(w.q0[i], a.q0[i]);
    s1 += sdot(w.q1[i], a.q1[i]);
  }
  const int o = int(OFFSET);
  return a.d * (w.d0 * float(s0 - o * a.s0) + w.d1 * float(s1 - o * a.s1) - w.m * float(a.s0 + a.s1));
}
