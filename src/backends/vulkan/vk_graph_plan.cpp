#include "backends/vulkan/vk_graph_plan.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <span>
#include <vector>

#include "backends/vulkan/vk_check.hpp"
#include "backends/vulkan/vk_fusion.hpp"
#include "backends/vulkan/vk_hazards.hpp"
#include "backends/vulkan/vk_instance.hpp"
#include "backends/vulkan/vk_matvec_plan.hpp"

namespace polyinfer::vk {
namespace {

constexpr uint32_t kMaxGroupsX = 65535;
const char* const kRoles[5] = {"src0", "src1", "src2", "src3", "dst"};

// Slot 0..3 of a node is its source, 4 and above its destination.
const pi_tensor& tensor_of(const pi_node& n, int slot) {
  return slot < 4 ? n.src[slot] : n.dst;
}
bool used(const pi_node& n, int slot) {
  return slot == 4 || (static_cast<uint32_t>(slot) < n.n_src && n.src[slot].buffer != nullptr);
}

template <typename T>
void append(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Whether MUL_MAT may read src1 as vec4s: every column of every batch starts
// 16-byte aligned within its binding. It is a specialization constant (2)
// rather than a test in the shader, where a CPU driver (lavapipe) would run
// both sides of the branch.
bool activations_vec4(const Binding& b, const pi_tensor& src1) {
  return ((b.offset | src1.nb[1] | src1.nb[2] | src1.nb[3]) & 15u) == 0;
}

// A region of the recording's scratch buffer: where one quantization's
// blocks go (48 bytes per 32 activations, shaders/quantize_q8.comp). Regions
// never share bytes, so only a product reading its own codes waits.
constexpr uint64_t kScratchAlign = 256;  // the largest minStorageBufferOffsetAlignment
constexpr uint64_t kQ8BlockBytes = 48;

struct Region {
  uint64_t offset = 0, bytes = 0;
};

Binding scratch_binding(const Region& r) {
  return {VK_NULL_HANDLE, r.offset, r.bytes, 0};
}
ByteRange scratch_bytes(const Region& r) {
  return {VK_NULL_HANDLE, r.offset, r.offset + r.bytes};
}

// A scratch region's slot: the activations' shape, no buffer, no strides.
pi_tensor scratch_tensor(const pi_tensor& act) {
  pi_tensor t{};
  std::copy(act.ne, act.ne + 4, t.ne);
  return t;
}

// Dispatch d's words at p.
void write_dispatch_params(const pi_graph& g, const DispatchPlan& d, uint32_t* p) {
  std::memset(p, 0, kParamWords * 4);
  for (uint32_t s = 0; s < kParamTensors; ++s) {
    const pi_tensor& t = d.tensors[s];
    p[s * 9] = d.slots[s].offset;
    for (int k = 0; k < 4; ++k) {
      p[s * 9 + 1 + k] = static_cast<uint32_t>(t.ne[k]);
      p[s * 9 + 5 + k] = static_cast<uint32_t>(t.nb[k]);
    }
  }
  if (d.param_node >= 0) {
    const pi_node& n = g.nodes[d.param_node];
    std::memcpy(p + kParamTensors * 9, n.i, sizeof n.i);
    std::memcpy(p + kParamTensors * 9 + 8, n.f, sizeof n.f);
  }
  std::memcpy(p + kExtraBase, d.op.extra.data(), d.op.extra.size() * 4);
}

// Builds the dispatches of one graph: bindings, grids, barriers and the key.
class Planner {
 public:
  // Fills `plan`, whose vectors keep their capacity: fresh allocations of
  // the dispatch list (hundreds of KB) at every plan cost page faults each
  // time (llama-1b: 190 -> 160 us per plan on the H200's host, session 18).
  Planner(pi_device dev, const pi_graph& g, bool serialize, GraphPlan& plan)
      : dev_(dev), g_(g), serialize_(serialize), plan_(plan) {
    plan_.dispatches.clear();
    plan_.key.clear();
    plan_.scratch_bytes = 0;
    plan_.zeroed.clear();
    // A node is at most one dispatch plus a quantization: no reallocation
    // moves a dispatch that is being filled in.
    plan_.dispatches.reserve(2 * uint64_t{g.n_nodes});
    plan_.key.reserve(g.n_nodes * 160);
  }

  void run() {
    plan_.units = plan_units(g_, dev_->features);
    reserve_zeroed();
    for (const Unit& u : plan_.units) {
      // Every node is checked, also inside a fused unit.
      std::array<OpPlan, kMaxUnitNodes> ops;
      for (uint32_t k = 0; k < u.count; ++k) ops[k] = plan_checked(u.first + k);
      if (u.quantize) add_quantize(u.first);
      switch (u.kind) {
        case UnitKind::kSingle:
          add_single(u, ops[0]);
          break;
        case UnitKind::kNormMul:
        case UnitKind::kAddNormMul:
          add_norm(u, ops[u.count - 2]);
          break;
        case UnitKind::kRopeCpy:
          add_rope_cpy(u, ops[0]);
          break;
        case UnitKind::kSwigluQuant:
          add_quantize(u.first + 1, &g_.nodes[u.first]);
          break;
        case UnitKind::kFolded:  // in an earlier product's dispatch
          break;
      }
    }
  }

 private:
  OpPlan plan_checked(uint32_t i) const {
    OpPlan op;
    std::string why;
    if (!plan_node(g_.nodes[i], dev_->features, &op, &why)) {
      throw VkError(PI_ERR_UNSUPPORTED, "Vulkan backend: node " + std::to_string(i) + " (" +
                                            pi_op_name(g_.nodes[i].op) +
                                            ") is not supported: " + why);
    }
    return op;
  }

  // Binds slot s of d to its tensor (absent: the destination's binding).
  void bind_slot(DispatchPlan& d, int s, uint64_t piece, const char* role) const {
    d.slots[s] = bind_tensor(dev_, d.tensors[s], piece, d.first, role);
  }

  // A new dispatch, the plan's last, filled in place (no copy of its ~1 KB).
  DispatchPlan& new_dispatch() { return plan_.dispatches.emplace_back(); }

  // The grid, the barrier and the key for the plan's last dispatch, whose
  // op, tensors and bindings are set.
  void finish(DispatchPlan& d, std::span<const ByteRange> reads,
              std::span<const ByteRange> writes) {
    const uint64_t gx = std::min<uint64_t>(d.op.groups, kMaxGroupsX);
    const uint64_t gy = (d.op.groups + gx - 1) / gx;
    if (gy > kMaxGroupsX) {
      throw VkError(PI_ERR_UNSUPPORTED, "node " + std::to_string(d.first) + " (" +
                                            pi_op_name(g_.nodes[d.first].op) +
                                            ") needs more workgroups than one dispatch holds");
    }
    d.groups_x = static_cast<uint32_t>(gx);
    d.groups_y = static_cast<uint32_t>(gy);
    if (reads.size() + writes.size() > d.ranges.size()) {  // a hand-built node with more sources
      throw VkError(PI_ERR_UNSUPPORTED, "node " + std::to_string(d.first) + " (" +
                                            pi_op_name(g_.nodes[d.first].op) +
                                            ") reads and writes more ranges than a dispatch holds");
    }
    std::copy(reads.begin(), reads.end(), d.ranges.begin());
    std::copy(writes.begin(), writes.end(), d.ranges.begin() + reads.size());
    d.n_reads = static_cast<uint8_t>(reads.size());
    d.n_writes = static_cast<uint8_t>(writes.size());
    // The first dispatch follows the recording's opening barrier.
    const bool wait = hazards_.add(reads, writes);
    d.barrier = plan_.dispatches.size() > 1 && (serialize_ || wait);

    std::string& key = plan_.key;
    key.append(d.op.shader);
    key.push_back('\0');
    append(key, d.op.spec);
    append(key, d.groups_x);
    append(key, d.groups_y);
    append(key, d.barrier);
    for (const Binding& b : d.slots) {
      append(key, b.buffer);
      append(key, b.desc_offset);
      append(key, b.range);
    }
  }

  void add_single(const Unit& u, const OpPlan& op) {
    const uint32_t i = u.first;
    const pi_node& n = g_.nodes[i];
    DispatchPlan& d = new_dispatch();
    d.op = op;
    // A product's activations as the fusion planner decided (vk_fusion.hpp).
    if (n.op == PI_OP_MUL_MAT && n.dst.ne[1] <= kMatvecCols)
      plan_matvec_codes(n, dev_->features, u.reads_codes, &d.op);
    d.first = i;
    d.param_node = static_cast<int32_t>(i);
    ByteRange reads[7];
    size_t n_reads = 0;
    const Binding dst = bind_tensor(dev_, n.dst, 4, i, "dst");  // also every absent slot's
    for (int s = 0; s < static_cast<int>(kParamTensors); ++s) {
      const int from = used(n, s) ? s : 4;
      d.tensors[s] = tensor_of(n, from);
      if (from == 4)
        d.slots[s] = dst;
      else
        bind_slot(d, s, n.op == PI_OP_MUL_MAT && from == 0 ? 16 : 4, kRoles[from]);
      // A product whose codes' norm is pending reads the codes, not src1
      // (which the norm's dispatch beside it writes).
      if (s < 4 && from == s && !(s == 1 && u.scale_norm != 0))
        reads[n_reads++] = tensor_bytes(n.src[s]);
    }
    if (n.op == PI_OP_MUL_MAT) d.op.spec[2] = activations_vec4(d.slots[1], n.src[1]) ? 1 : 0;
    const bool vec_attn = n.op == PI_OP_FLASH_ATTN && attn_vec(n, d.slots);
    const bool sub = dev_->features.subgroup_arith;
    if (vec_attn) d.op.shader = sub ? "flash_attn_vec_subgroup" : "flash_attn_vec";
    if (u.reads_codes) {
      // The codes of src1 that the last quantization wrote (vk_fusion.hpp).
      d.tensors[2] = scratch_tensor(n.src[1]);
      d.slots[2] = scratch_binding(codes_);
      reads[n_reads++] = scratch_bytes(codes_);
    }
    if (u.scale_norm != 0) {  // src1 bound to what it reads (freq factors may take the slot)
      d.tensors[1] = d.tensors[2];
      d.slots[1] = d.slots[2];
    }
    ByteRange writes[5] = {tensor_bytes(n.dst)};
    size_t n_writes = 1;
    if (u.writes_codes) {  // FLASH_ATTN: the next product's codes (vk_fusion.hpp)
      const pi_tensor& act = g_.nodes[i + 1].src[1];
      new_codes(act);
      d.op.shader = !vec_attn                        ? "flash_attn_codes"
                    : dev_->features.subgroup_lanes8 ? "flash_attn_vec_codes_subgroup"
                                                     : "flash_attn_vec_codes";
      d.tensors[7] = scratch_tensor(act);
      d.slots[7] = scratch_binding(codes_);
      writes[n_writes++] = scratch_bytes(codes_);
    }
    if (u.rope != 0 || u.cache != 0) n_writes += add_epilogue(u, d, reads, n_reads, writes + 1);
    if (u.norm != 0) n_writes += add_norm_blocks(u, d, reads, n_reads, writes + n_writes);
    if (u.swiglu != 0) n_writes += add_swiglu_blocks(u, d, reads, n_reads, writes + n_writes);
    if (u.scale_norm != 0) plan_matvec_norm_scale(g_.nodes[u.scale_norm].f[0], &d.op);
    if (n.op == PI_OP_MUL_MAT) plan_matvec_early_acts(n, &d.op);
    if (vec_attn && d.op.extra[1] > 1) {
      n_writes += attn_splits(d, n, writes + n_writes);
    } else if (n.op == PI_OP_FLASH_ATTN) {
      d.op.extra[1] = 1;  // flash_attn.comp, or the vector kernel unsplit
    }
    finish(d, {reads, n_reads}, {writes, n_writes});
  }

  // A product's epilogue (vk_fusion.hpp's Unit::rope, Unit::cache) in the
  // direct kernel's dispatch d: the ROPE's output in T_OUT0, the cache view in
  // T_OUT1, the positions in T_SRC3 and the freq factors in T_SRC1 (the kernel
  // reads codes, not src1), with rows one per workgroup its pairs' words in
  // T_OUT2; the ROPE's parameter words. Adds the reads at reads[n_reads], the
  // writes at `writes`; returns how many writes.
  size_t add_epilogue(const Unit& u, DispatchPlan& d, ByteRange* reads, size_t& n_reads,
                      ByteRange* writes) {
    const pi_node* rope = u.rope != 0 ? &g_.nodes[u.rope] : nullptr;
    const pi_node* cpy = u.cache != 0 ? &g_.nodes[u.cache] : nullptr;
    plan_matvec_epilogue(rope != nullptr, cpy ? static_cast<int>(cpy->dst.type) : -1, &d.op);
    d.folded = {u.rope, u.cache};
    size_t n = 0;
    if (rope) {
      const OpPlan rope_op = plan_checked(u.rope);
      d.op.extra = rope_op.extra;
      d.param_node = static_cast<int32_t>(u.rope);
      d.tensors[5] = rope->dst;
      d.tensors[3] = rope->src[1];
      bind_slot(d, 5, 4, "ROPE dst");
      bind_slot(d, 3, 4, "positions");
      reads[n_reads++] = tensor_bytes(rope->src[1]);
      writes[n++] = tensor_bytes(rope->dst);
      if (used(*rope, 2)) {
        d.tensors[1] = rope->src[2];
        bind_slot(d, 1, 4, "freq factors");
        reads[n_reads++] = tensor_bytes(rope->src[2]);
      }
      if (pairs_in_scratch(u)) {
        const pi_node& product = g_.nodes[u.first];
        writes[n++] = take_zeroed(d, 7, pair_words(product), scratch_tensor(product.dst));
      }
    }
    if (cpy) {
      d.tensors[6] = cpy->dst;
      bind_slot(d, 6, 4, "cache");
      writes[n++] = tensor_bytes(cpy->dst);
    }
    return n;
  }

  // The residual ADD and the next norm's codes made by product unit u's
  // workgroups, 32 rows at a time (vk_fusion.hpp's Unit::norm) in dispatch d
  // of mul_mat_vec_direct_norm (shaders/norm_blocks.glsl): the residual in
  // T_SRC1 (the kernel reads codes, not src1), the norm's weight in T_SRC3,
  // the ADD's output in T_OUT0, the next products' codes in a new region
  // (T_OUT1; each block's Σ sum² in its word 10), a count per block in the zeroed words
  // (T_OUT2). Adds the reads at reads[n_reads], the writes at `writes`;
  // returns how many writes.
  size_t add_norm_blocks(const Unit& u, DispatchPlan& d, ByteRange* reads, size_t& n_reads,
                         ByteRange* writes) {
    const pi_node &p = g_.nodes[u.first], &add = g_.nodes[u.norm], &mul = g_.nodes[u.norm + 2];
    plan_matvec_norm_tail(p, &d.op);
    d.folded = {u.norm, 0};
    const pi_tensor& residual = add_residual(add, p.dst);
    d.tensors[1] = residual;
    d.tensors[3] = mul.src[1];
    d.tensors[5] = add.dst;
    bind_slot(d, 1, 4, "residual");
    bind_slot(d, 3, 4, "norm weight");
    bind_slot(d, 5, 4, "sum");
    new_codes(mul.dst);
    d.tensors[6] = scratch_tensor(mul.dst);
    d.slots[6] = scratch_binding(codes_);
    reads[n_reads++] = tensor_bytes(residual);
    reads[n_reads++] = tensor_bytes(mul.src[1]);
    writes[0] = tensor_bytes(add.dst);
    writes[1] = scratch_bytes(codes_);
    writes[2] = take_zeroed(d, 7, block_words(p), scratch_tensor(p.dst));
    return 3;
  }

  // The up product and SWIGLU folded into gate unit u's dispatch d of
  // mul_mat_vec_direct_swiglu (vk_fusion.hpp's Unit::swiglu;
  // shaders/swiglu_blocks.glsl): the up weights in T_SRC3, the up product's
  // output in T_OUT0, SWIGLU's in T_OUT1, a count per block of 32 rows in the
  // zeroed words as T_OUT2, whose binding reaches on to the down product's
  // codes in a new region (host-derived word 9 holds its byte offset: the
  // two writes need one slot, as a dispatch has four it writes). Adds the
  // reads at reads[n_reads], the writes at `writes`; returns how many writes.
  size_t add_swiglu_blocks(const Unit& u, DispatchPlan& d, ByteRange* reads, size_t& n_reads,
                           ByteRange* writes) {
    const pi_node &gate = g_.nodes[u.first], &up = g_.nodes[u.first + 1],
                  &swiglu = g_.nodes[u.swiglu];
    plan_matvec_swiglu_tail(gate, &d.op);
    d.folded = {u.first + 1, u.swiglu};
    d.tensors[3] = up.src[0];
    d.tensors[5] = up.dst;
    d.tensors[6] = swiglu.dst;
    bind_slot(d, 3, 16, "up weights");
    bind_slot(d, 5, 4, "up dst");
    bind_slot(d, 6, 4, "SWIGLU dst");
    reads[n_reads++] = tensor_bytes(up.src[0]);
    writes[0] = tensor_bytes(up.dst);
    writes[1] = tensor_bytes(swiglu.dst);
    writes[2] = take_zeroed(d, 7, block_words(gate), scratch_tensor(gate.dst));
    new_codes(swiglu.dst);
    d.slots[7].range = codes_.offset + codes_.bytes;
    if (d.slots[7].range > dev_->limits.maxStorageBufferRange) {
      throw VkError(PI_ERR_UNSUPPORTED, "node " + std::to_string(u.first) +
                                            ": the scratch words and codes span more than the "
                                            "device binds at once");
    }
    d.op.extra[9] = static_cast<uint32_t>(codes_.offset);
    writes[3] = scratch_bytes(codes_);
    return 4;
  }

  // A count per block of 32 rows of a product with Unit::norm or Unit::swiglu.
  static uint64_t block_words(const pi_node& product) {
    return static_cast<uint64_t>(product.dst.ne[0] / 32);
  }

  // The words that shaders find zero at every run: one block at the front of
  // the scratch buffer, so that one fill zeroes them all. A count per (token,
  // head) of every FLASH_ATTN that may split its cache (attn_splits), a word
  // per ROPE pair of every product whose epilogue pairs rows of two
  // workgroups (add_epilogue: the first sum to arrive waits there), a count
  // per block of 32 rows of every product that makes a norm's or SWIGLU's
  // codes (add_norm_blocks, add_swiglu_blocks). None (no fill): short caches
  // and prompts, Q4_0 products that make no codes.
  void reserve_zeroed() {
    uint64_t words = 0;
    for (uint32_t i = 0; i < g_.n_nodes; ++i) {
      const pi_node& n = g_.nodes[i];
      if (attn_node_splits(n) > 1) words += static_cast<uint64_t>(n.src[0].ne[1] * n.src[0].ne[2]);
    }
    for (const Unit& u : plan_.units) {
      if (pairs_in_scratch(u)) words += pair_words(g_.nodes[u.first]);
      if (u.norm != 0 || u.swiglu != 0) words += block_words(g_.nodes[u.first]);
    }
    zeroed_bytes_ = 4 * words;
    if (words == 0) return;
    plan_.zeroed.emplace_back(0, zeroed_bytes_);
    plan_.scratch_bytes = (zeroed_bytes_ + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
  }

  // Whether product unit u's folded ROPE pairs rows of two workgroups
  // through words of the zeroed block (reserve_zeroed and add_epilogue agree
  // through this).
  bool pairs_in_scratch(const Unit& u) const {
    return u.rope != 0 && !matvec_direct_pairs(g_.nodes[u.first]);
  }

  // A product's ROPE pairs' words: half its rows, per column.
  static uint64_t pair_words(const pi_node& product) {
    return static_cast<uint64_t>(product.dst.ne[0] / 2 * product.dst.ne[1]);
  }

  // The next `words` words of the block as slot s of d, its tensor t (the
  // whole block, from its aligned start: a dispatch's words lie at any
  // multiple of 4 bytes, which no descriptor could start at); returns their
  // bytes.
  ByteRange take_zeroed(DispatchPlan& d, int s, uint64_t words, const pi_tensor& t) {
    const Region r{next_zeroed_, 4 * words};
    next_zeroed_ += r.bytes;
    d.tensors[s] = t;
    d.slots[s] = {VK_NULL_HANDLE, 0, zeroed_bytes_, static_cast<uint32_t>(r.offset)};
    return scratch_bytes(r);
  }

  // shaders/flash_attn_vec.comp's split of a long cache: attn_decode_splits
  // workgroups per (token, head) (the shader uses as many as the cache's length
  // asks for); their partial results in a scratch region (slot T_OUT0: D + 2
  // floats per split) and a count per (token, head) in the block that
  // reserve_zeroed zeroes (slot T_OUT1).
  // Writes its two scratch ranges at `writes`; returns 2.
  size_t attn_splits(DispatchPlan& d, const pi_node& n, ByteRange* writes) {
    const pi_tensor& q = n.src[0];
    const uint64_t rows = static_cast<uint64_t>(q.ne[1] * q.ne[2]);
    const uint64_t splits = d.op.extra[1];
    d.op.groups = rows * splits;
    const Region r{plan_.scratch_bytes, 4 * rows * splits * static_cast<uint64_t>(q.ne[0] + 2)};
    plan_.scratch_bytes += (r.bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
    d.tensors[5] = scratch_tensor(q);
    d.slots[5] = scratch_binding(r);
    writes[0] = scratch_bytes(r);
    writes[1] = take_zeroed(d, 6, rows, scratch_tensor(q));
    return 2;
  }

  // A new scratch region for the codes of `act` (codes_); returns its blocks.
  uint64_t new_codes(const pi_tensor& act) {
    const uint64_t blocks =
        static_cast<uint64_t>(act.ne[0] / 32 * act.ne[1] * act.ne[2] * act.ne[3]);
    codes_ = {plan_.scratch_bytes, blocks * kQ8BlockBytes};
    plan_.scratch_bytes += (codes_.bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
    return blocks;
  }

  // A new scratch region, and the dispatch that quantizes node i's src1 into
  // it; with `swiglu` (the node before, vk_fusion.hpp's kSwigluQuant), the
  // dispatch computes that SWIGLU too: its gate and up in slots 0 and 1, its
  // output in T_OUT0.
  void add_quantize(uint32_t i, const pi_node* swiglu = nullptr) {
    const pi_tensor& act = g_.nodes[i].src[1];
    const uint64_t blocks = new_codes(act);
    DispatchPlan& d = new_dispatch();
    const uint64_t invocations = swiglu ? 32 * blocks : blocks;
    // SWIGLU's blocks eight lanes each (q8_lanes.glsl); a plain quantize keeps
    // one invocation per block (the lanes were measured on SWIGLU only).
    const bool lanes = swiglu && dev_->features.subgroup_lanes8;
    d.op = {lanes ? "quantize_q8_subgroup" : "quantize_q8",
            {swiglu ? 1u : 0u},
            1,
            (invocations + 63) / 64,
            {}};
    d.first = swiglu ? i - 1 : i;
    d.count = swiglu ? 1 : 0;
    d.tensors.fill(scratch_tensor(act));
    d.slots.fill(scratch_binding(codes_));
    // Fixed arrays, not vectors: every submit plans its graph again.
    ByteRange reads[2], writes[2] = {scratch_bytes(codes_)};
    size_t n = 1;
    if (swiglu) {
      d.tensors[0] = swiglu->src[0];
      d.tensors[1] = swiglu->src[1];
      d.tensors[5] = swiglu->dst;
      bind_slot(d, 0, 4, "gate");
      bind_slot(d, 1, 4, "up");
      bind_slot(d, 5, 4, "dst");
      reads[0] = tensor_bytes(swiglu->src[0]);
      reads[1] = tensor_bytes(swiglu->src[1]);
      writes[1] = tensor_bytes(swiglu->dst);
      n = 2;
    } else {
      d.tensors[0] = act;
      bind_slot(d, 0, 4, "src1");
      reads[0] = tensor_bytes(act);
    }
    finish(d, {reads, n}, {writes, n});
  }

  // [ADD,] RMS_NORM, MUL as one dispatch of norm.comp (FUSE 1 or 2): the
  // sources, the weight row in slot 2, the product in dst, the norm and the
  // sum in T_OUT0 and T_OUT1.
  void add_norm(const Unit& u, const OpPlan& norm_op) {
    const bool add = u.kind == UnitKind::kAddNormMul;
    const pi_node& first = g_.nodes[u.first];
    const pi_node& norm = g_.nodes[u.first + u.count - 2];
    const pi_node& mul = g_.nodes[u.first + u.count - 1];
    DispatchPlan& d = new_dispatch();
    d.op = norm_op;
    const uint32_t wg = fused_norm_workgroup(norm.dst.ne[0], dev_->features);
    d.op.spec = {add ? 2u : 1u, fused_norm_values(norm.dst.ne[0], wg), wg};
    d.op.n_spec = 3;
    if (u.writes_codes)
      d.op.shader = dev_->features.subgroup_lanes8 ? "norm_codes_subgroup" : "norm_codes";
    d.first = u.first;
    d.count = u.count;
    d.param_node = static_cast<int32_t>(u.first + u.count - 2);
    d.tensors.fill(mul.dst);
    d.tensors[0] = first.src[0];
    if (add) d.tensors[1] = first.src[1];
    d.tensors[2] = mul.src[1];
    d.tensors[5] = norm.dst;
    if (add) d.tensors[6] = first.dst;
    const char* const roles[kParamTensors] = {"src0", "src1", "weight", "dst",
                                              "dst",  "norm", "sum",    "dst"};
    for (int s = 0; s < static_cast<int>(kParamTensors); ++s) bind_slot(d, s, 4, roles[s]);
    ByteRange reads[3] = {tensor_bytes(first.src[0]), tensor_bytes(mul.src[1])};
    ByteRange writes[4] = {tensor_bytes(mul.dst), tensor_bytes(norm.dst)};
    size_t n_reads = 2, n_writes = 2;
    if (add) {
      reads[n_reads++] = tensor_bytes(first.src[1]);
      writes[n_writes++] = tensor_bytes(first.dst);
    }
    if (u.writes_codes) {  // the product's codes, in slot T_OUT2 (shaders/norm.comp CODES)
      new_codes(mul.dst);
      d.tensors[7] = scratch_tensor(mul.dst);
      d.slots[7] = scratch_binding(codes_);
      writes[n_writes++] = scratch_bytes(codes_);
    }
    finish(d, {reads, n_reads}, {writes, n_writes});
  }

  // ROPE and the CPY of its output into the KV cache as one dispatch of
  // rope.comp (CACHE = the cache's type + 1): ROPE's sources and destination,
  // the cache view in T_OUT0.
  void add_rope_cpy(const Unit& u, const OpPlan& rope_op) {
    const pi_node& rope = g_.nodes[u.first];
    const pi_node& cpy = g_.nodes[u.first + 1];
    DispatchPlan& d = new_dispatch();
    d.op = rope_op;
    d.op.spec = {cpy.dst.type + 1};
    d.op.n_spec = 1;
    d.first = u.first;
    d.count = u.count;
    d.param_node = static_cast<int32_t>(u.first);
    d.tensors.fill(rope.dst);
    ByteRange reads[3];
    size_t n_reads = 0;
    for (int s = 0; s < 3; ++s) {
      if (!used(rope, s)) continue;
      d.tensors[s] = rope.src[s];
      reads[n_reads++] = tensor_bytes(rope.src[s]);
    }
    d.tensors[5] = cpy.dst;
    const char* const roles[kParamTensors] = {"src0", "src1", "src2",  "dst",
                                              "dst",  "dst",  "cache", "dst"};
    for (int s = 0; s < static_cast<int>(kParamTensors); ++s) bind_slot(d, s, 4, roles[s]);
    const ByteRange writes[2] = {tensor_bytes(rope.dst), tensor_bytes(cpy.dst)};
    finish(d, {reads, n_reads}, writes);
  }

  pi_device dev_;
  const pi_graph& g_;
  bool serialize_;
  GraphPlan& plan_;
  HazardTracker hazards_;
  Region codes_;
  uint64_t next_zeroed_ = 0;   // the next dispatch's words in the block at offset 0
  uint64_t zeroed_bytes_ = 0;  // that block's size
};

}  // namespace

ByteRange tensor_bytes(const pi_tensor& t) {
  const auto* buf = reinterpret_cast<const pi_buffer_s*>(t.buffer);
  const uint64_t start = buf->alloc.offset + t.offset;
  return {buf->alloc.block->buffer, start, start + tensor_extent(t)};
}

// The descriptor must not depend on where in its buffer a tensor sits, or
// every decode step (a new cache write offset, a mask one float longer that
// moves the activations) would need a new recording. So it binds the whole
// block when the device binds that many bytes at once (NVIDIA: 4 GiB), else
// the window of half the bindable range that holds the tensor's start: the
// binding changes only when a tensor crosses into the next window. A tensor
// larger than half the range is bound from its own (aligned) start. Under
// synchronization validation each tensor is bound to its own bytes instead:
// the layer takes a descriptor's range as what a dispatch reads or writes, so
// it can then check the barriers that plan_graph leaves out.
// A binding starts at a multiple of `piece` bytes and spans whole pieces:
// 16 for MUL_MAT's weights, which the matrix-vector shader reads as the
// 16-byte pieces around each row (shaders/staged_rows.glsl), 4 (words) else.
Binding bind_tensor(pi_device dev, const pi_tensor& t, uint64_t piece, uint32_t node,
                    const char* role) {
  const auto* buf = reinterpret_cast<const pi_buffer_s*>(t.buffer);
  const uint64_t extent = tensor_extent(t);
  if (t.offset + extent > buf->size) {
    throw VkError(PI_ERR_INVALID, "node " + std::to_string(node) + ": " + role +
                                      " reaches past the end of its buffer");
  }
  const Block& block = *buf->alloc.block;
  const uint64_t start = buf->alloc.offset + t.offset;
  const uint64_t align = std::max<uint64_t>(dev->limits.minStorageBufferOffsetAlignment, piece);
  const uint64_t max_range = dev->limits.maxStorageBufferRange / piece * piece;
  Binding b;
  b.buffer = block.buffer;
  if (instance().sync_validation) {
    b.desc_offset = start / align * align;
    b.range = std::min(block.size, (start + extent + piece - 1) / piece * piece) - b.desc_offset;
    b.offset = static_cast<uint32_t>(start - b.desc_offset);
    return b;
  }
  if (block.size > max_range) {
    const uint64_t window = std::max(align, max_range / 2 / align * align);
    b.desc_offset = start / window * window;
    if (start - b.desc_offset + extent > max_range) b.desc_offset = start / align * align;
  }
  b.range = std::min(max_range, block.size - b.desc_offset);
  b.offset = static_cast<uint32_t>(start - b.desc_offset);
  if (b.offset + extent > b.range) {
    throw VkError(PI_ERR_UNSUPPORTED, "node " + std::to_string(node) + ": " + role + " spans " +
                                          std::to_string(extent) +
                                          " bytes, more than the device binds at once");
  }
  return b;
}

// Whether FLASH_ATTN may take shaders/flash_attn_vec.comp: its shapes
// (attn_vec_shape: a few query tokens, an F16 or Q8_0 cache; prompts keep
// flash_attn.comp or flash_attn_tiled.comp), a cache whose rows and heads
// start 16-byte aligned within their bindings (F16: it reads them as 16-byte
// pieces) or at an even byte (Q8_0: the blocks' d read as halves of words),
// and a mask whose rows are word aligned.
bool attn_vec(const pi_node& n, const std::array<Binding, kParamTensors>& slots) {
  const pi_tensor &k = n.src[1], &v = n.src[2], &mask = n.src[3];
  const uint64_t align = attn_vec_alignment(n);
  const bool kv_aligned =
      ((slots[1].offset | k.nb[1] | k.nb[2] | slots[2].offset | v.nb[1] | v.nb[2]) % align) == 0;
  const bool mask4 = mask.buffer == nullptr || ((slots[3].offset | mask.nb[1]) & 3u) == 0;
  return attn_vec_shape(n) && kv_aligned && mask4;
}

void plan_graph(pi_device dev, const pi_graph& g, bool serialize, GraphPlan* plan) {
  Planner(dev, g, serialize, *plan).run();
}

void write_params(const pi_graph& g, const GraphPlan& plan, uint32_t* words) {
  for (size_t i = 0; i < plan.dispatches.size(); ++i)
    write_dispatch_params(g, plan.dispatches[i], words + i * kParamWords);
}

void write_params(const pi_graph& g, const GraphPlan& plan, std::span<const uint32_t> which,
                  uint32_t* words) {
  for (uint32_t i : which) write_dispatch_params(g, plan.dispatches[i], words + i * kParamWords);
}

}  // namespace polyinfer::vk
