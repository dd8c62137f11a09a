// Weight rows staged in shared memory for mul_mat_vec_staged.comp: a segment
// of SEG values of each of the workgroup's ROWS rows at a time, copied in
// whole 16-byte pieces. Needs common.glsl, blocks.glsl and WTYPE, ROWS, SEG,
// WG.
//
// A row may start at any byte (blocks of 18, 34 or 210 bytes put rows at
// every 2-byte offset), so a segment is read as the 16-byte aligned pieces
// around it: one uvec4 load each, whatever the alignment, and the row's bytes
// then sit in its slot at the same offset (0..15) as in memory. Every
// invocation issues all its loads (stage_load) before it stores any
// (stage_store), so that a workgroup has all its rows' pieces in flight.

// src0 as 16-byte pieces. The host binds the weights with a range that is a
// whole number of pieces (vk_graph_plan.cpp), so every piece that holds a
// row's bytes lies inside the binding.
layout(std430, set = 0, binding = 1) readonly buffer Pieces { uvec4 v[]; } pieces[4];

// Values and bytes per block (F16: per value).
const uint BLOCK = WTYPE == 1u ? 1u : (WTYPE == 2u || WTYPE == 8u) ? 32u : 256u;
const uint BLOCK_BYTES = WTYPE == 1u ? 2u : WTYPE == 2u ? 18u : WTYPE == 8u ? 34u :
                         WTYPE == 12u ? 144u : WTYPE == 13u ? 176u : 210u;
const uint SEG_BYTES = SEG / BLOCK * BLOCK_BYTES;
// Pieces per row slot: SEG_BYTES bytes starting at any of a piece's 16 offsets.
const uint SLOT16 = (SEG_BYTES + 30u) / 16u;
const uint SLOT_BYTES = 16u * SLOT16;
const uint PER_INV = (ROWS * SLOT16 + WG - 1u) / WG;  // pieces per invocation

// +4 words: a funnel read of a slot's last word also reads the word after it.
shared uint staged[ROWS * SLOT16 * 4u + 4u];
uvec4 pending[PER_INV];  // loaded by stage_load, stored by stage_store

// One segment of the workgroup's rows: row r (r < valid; the last workgroup's
// slots from `valid` on stand for rows past N and are neither loaded nor
// stored) has its segment at byte first + r * stride + offset of src0's
// binding, nbytes long.
struct RowSegment {
  uint first, stride, valid, offset, nbytes;
};

// Byte address of row r's segment in src0.
uint segment_src(RowSegment g, uint r) { return g.first + min(r, g.valid - 1u) * g.stride + g.offset; }

// This invocation's piece j: its index p among the workgroup's pieces, where
// it comes from (src0's piece src16), and whether it holds bytes of a row.
bool piece(RowSegment g, uint j, out uint p, out uint src16) {
  p = gl_LocalInvocationID.x + j * WG;
  const uint slot = p / SLOT16, i = p % SLOT16, src = segment_src(g, slot);
  src16 = (src >> 4) + i;
  return slot < g.valid && 16u * i < (src & 15u) + g.nbytes;
}

void stage_load(RowSegment g) {
  const uint last = uint(pieces[T_SRC0].v.length()) - 1u;
  [[unroll]] for (uint j = 0u; j < PER_INV; ++j) {
    uint p, src16;
    if (piece(g, j, p, src16)) {
      pending[j] = pieces[T_SRC0].v[min(src16, last)];
    } else {
      pending[j] = uvec4(0u);
    }
  }
}

void stage_store(RowSegment g) {
  [[unroll]] for (uint j = 0u; j < PER_INV; ++j) {
    uint p, src16;
    if (piece(g, j, p, src16)) {
      staged[4u * p] = pending[j].x;
      staged[4u * p + 1u] = pending[j].y;
      staged[4u * p + 2u] = pending[j].z;
      staged[4u * p + 3u] = pending[j].w;
    }
  }
}

// Byte offset in `staged` of row r's segment: its slot plus the segment's
// offset within its first piece.
uint slot_base(RowSegment g, uint r) { return r * SLOT_BYTES + (segment_src(g, r) & 15u); }

// The 4 and 16 bytes at byte a of `staged`, any alignment (funnel: blocks.glsl).
uint s32(uint a) {
  const uint i = a >> 2, s = (a & 3u) * 8u;
  return (staged[i] >> s) | ((staged[i + 1u] << 1u) << (31u - s));
}
uvec4 s128(uint a) {
  const uint i = a >> 2;
  const uvec4 lo = uvec4(staged[i], staged[i + 1u], staged[i + 2u], staged[i + 3u]);
  return funnel(lo, uvec4(lo.yzw, staged[i + 4u]), (a & 3u) * 8u);
}
float s_half(uint a) { return half_to_float(s32(a) & 0xFFFFu); }
