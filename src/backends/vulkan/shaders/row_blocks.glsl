// Blocks of 32 rows of a decode product that the dispatch's own workgroups
// finish together, with no barrier stage after the product: every
// invocation that stores a row stores it non-privately and counts it in its
// block's word (slot T_OUT2, in the block the host zeroes before every run);
// the one whose count completes the block, and its subgroup, then read the
// block's rows and write what the next stage needs. norm_blocks.glsl (the
// residual ADD and the next norm's codes) and swiglu_blocks.glsl (SWIGLU
// over the gate and up rows and its codes) do so. Needs common.glsl, binding
// 3 declared as outs[3] and the Vulkan memory model (Features::memory_model)
// for the release and acquire around the count.
#extension GL_KHR_memory_scope_semantics : require

// The product's rows, which another workgroup of the dispatch reads: stored
// and loaded non-privately, so that the count's release and the last
// subgroup's acquire order them.
layout(std430, set = 0, binding = 2) nonprivate buffer DstShared { uint w[]; } dst_c;

const int SEM_AV = gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible;

// Counts a row this invocation stored in word `block` of T_OUT2; true for
// the count that makes it `rows`. The count's release orders the store before
// it. It acquires nothing: the barrier of acquire_block is the acquire, in
// the block's last subgroup only, so that the other rows' invocations pay
// for no acquire (which the driver may make an invalidation of the L1 that
// holds the codes other workgroups read: on the H200, session 36, llama-8b
// Q4_0's step took 2,645 us against 2,672 with an acquire-release count).
// No workgroup barrier: each invocation that stores a row counts it (two
// workgroup barriers around one count per workgroup made llama-8b's O
// product 9.9 -> 16.8 us serialized, H200).
bool count_row(uint block, uint rows) {
  return atomicAdd(outs[2].w[(t_off(T_OUT2) >> 2) + block], 1u, gl_ScopeQueueFamily,
                   gl_StorageSemanticsBuffer,
                   gl_SemanticsRelease | gl_SemanticsMakeAvailable) == rows - 1u;
}

// Whether this invocation's subgroup finishes a block (`last` true in the
// invocation whose count completed it); if so, the subgroup's barrier has
// acquired the block's rows for all its lanes. The barrier's acquire, after
// the count that completed the block, synchronizes with every row's release
// (a fence after the atomic, as the memory model allows).
bool acquire_block(bool last) {
  if (subgroupMax(last ? 1u : 0u) == 0u) return false;  // uniform per subgroup (arithmetic, not vote)
  controlBarrier(gl_ScopeSubgroup, gl_ScopeQueueFamily, gl_StorageSemanticsBuffer, SEM_AV);
  return true;
}
