// One 8-bit block (q8_block.glsl's format and values, bit for bit) made by
// eight invocations at once, four values each, where quantize_block has one
// invocation walk all 32: its amax and its code sums were chains of ~40
// dependent steps, ~1-2.7 us of a fused norm or decode attention whose codes
// feed the next product (BENCHMARKS.md, session 29: the codes compiled out;
// session 31: this), and a part of the SWIGLU + quantize dispatch.
// Needs q8_block.glsl, subgroup shuffles, subgroups of 8 to 64 invocations
// (Features::subgroup_lanes8) and the eight invocations active together:
// places g .. g + 7 of lane_index() (below), g a multiple of 8, hold values
// 0..3, 4..7, ..., 28..31 of the block.
#extension GL_KHR_shader_subgroup_shuffle : enable

// This invocation's place in the workgroup counted through its subgroup, so
// that eight consecutive places are eight consecutive lanes of one subgroup
// (gl_LocalInvocationIndex need not map to lanes that way). The host checks
// that the workgroup is a whole number of subgroups.
uint lane_index() { return gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID; }

// Lane j (0..7) of a block holding x = values 4j..4j+3: .x = the block's
// word j (codes 4j..4j+3), .y = its word 8 + j for j < 4 (d's bits, the two
// code sums, two zero words).
uvec2 quantize_lanes(vec4 x, uint j) {
  const vec4 m = abs(x);
  float amax = max(max(m.x, m.y), max(m.z, m.w));
  amax = max(amax, subgroupShuffleXor(amax, 1u));
  amax = max(amax, subgroupShuffleXor(amax, 2u));
  amax = max(amax, subgroupShuffleXor(amax, 4u));
  const float id = amax > 0.0 ? 127.0 / amax : 0.0;
  const uint q = codes4(x * id);
  int s = sdot(q, 0x01010101u);
  s += subgroupShuffleXor(s, 1u);
  s += subgroupShuffleXor(s, 2u);  // lanes 0..3: codes 0..15; lanes 4..7: 16..31
  const int other = subgroupShuffleXor(s, 4u);
  const int s0 = j < 4u ? s : other, s1 = j < 4u ? other : s;
  const uint meta = j == 0u   ? floatBitsToUint(amax / 127.0)
                    : j == 1u ? (uint(s0) & 0xFFFFu) | (uint(s1) << 16)
                              : 0u;
  return uvec2(q, meta);
}
