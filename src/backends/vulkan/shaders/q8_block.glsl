// 32 float activations to one 8-bit block, as the CUDA kernel's quantize
// pass: d = amax / 127 in float32, codes round(x / d), and the sums of codes
// 0..15 and 16..31 (for the weights' offsets and mins). One definition for
// the workgroup's own quantization (unit_dot_q8.glsl) and the dispatch that
// quantizes a product's activations once (quantize_q8.comp), so both give the
// same codes. Needs a device with integer dot products.
#extension GL_EXT_spirv_intrinsics : require

// OpSDot (SPV_KHR_integer_dot_product) of two words as 4 x 8-bit signed
// vectors (packed_format 0: PackedVectorFormat4x8Bit), with the int operands
// glslang gives GL_EXT_integer_dot_product's dotPacked4x8EXT, which glslang 11
// lacks, so the instruction is named directly.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450)
int sdot4x8(int a, int b, spirv_literal int packed_format);
int sdot(uint a, uint b) { return sdot4x8(int(a), int(b), 0); }

// Four values already divided by d (|v| <= 127) rounded to signed bytes:
// adding 1.5 * 2^23 leaves round(v) in the low mantissa bits, two's
// complement in the low byte.
uint codes4(vec4 v) {
  const uvec4 b = floatBitsToUint(v + 12582912.0) & 0xFFu;
  return b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
}

struct Q8Block {
  uvec4 q0, q1;  // codes of values 0..15 and 16..31
  uvec2 meta;    // d's bits; the sums of codes 0..15 and 16..31, 16 bits each
};

// Word j (0..11) of a block as it is stored for the products (48 bytes:
// codes 0..15, codes 16..31, meta, two zero words; unit_dot_q8.glsl reads
// them as three uvec4s). quantize_q8.comp, norm.comp and flash_attn.comp
// store blocks word by word through it, each to its own binding.
uint q8_word(Q8Block b, uint j) {
  const uvec4 v = j < 4u ? b.q0 : j < 8u ? b.q1 : uvec4(b.meta, 0u, 0u);
  return v[j % 4u];
}

Q8Block quantize_block(vec4 x[8]) {
  float amax = 0.0;
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
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
  return Q8Block(uvec4(q[0], q[1], q[2], q[3]), uvec4(q[4], q[5], q[6], q[7]),
                 uvec2(floatBitsToUint(amax / 127.0), (uint(s0) & 0xFFFFu) | (uint(s1) << 16)));
}
