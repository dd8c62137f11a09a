// What each op needs from the device: whether a node is supported (types,
// shapes and params only; buffers are never looked at), and if so which
// shader, specialization constants, workgroup count and host-derived
// parameters run it.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "backends/vulkan/vk_features.hpp"
#include "polyinfer/backend/abi.h"

namespace polyinfer::vk {

// Dispatch parameter words (shaders/common.glsl reads the same layout): 8
// tensors (src0..3, dst and a fused dispatch's three further outputs) x 9
// words (offset, ne[4], nb[4]), i[8] at 72, f[8] at 80, host-derived words at
// 88. Each dispatch binds its own 512 bytes as a uniform buffer: a multiple of
// every device's minUniformBufferOffsetAlignment (at most 256).
constexpr uint32_t kParamTensors = 8;
constexpr uint32_t kParamWords = 128;
constexpr uint32_t kExtraBase = 88;

// Specialization constants 0..n_spec - 1 of a shader.
using SpecConstants = std::array<uint32_t, 10>;

struct OpPlan {
  const char* shader = nullptr;  // name in the embedded shader table
  SpecConstants spec{};
  uint32_t n_spec = 0;
  uint64_t groups = 0;  // workgroups (of 64 invocations unless a spec constant says)
  std::array<uint32_t, kParamWords - kExtraBase> extra{};
};

// true and a plan if the Vulkan backend runs this node; false and a reason if not.
bool plan_node(const pi_node& n, const Features& features, OpPlan* plan, std::string* why);

// Bytes from a tensor's first byte to one past its last (for block types nb[0]
// is the block size and ne[0] counts elements).
uint64_t tensor_extent(const pi_tensor& t);

// Workgroups per (token, head) of a decode FLASH_ATTN over n_kv positions
// (shaders/flash_attn_vec.comp's split of a long cache): one up to 128
// positions, then the power of two at or above n_kv / 128, at most 16 and at
// most 256 / (tokens x heads) (about two workgroups per multiprocessor of a
// large GPU). It grows with the cache in four steps at most, so a decode
// step's recording serves the next ones until the cache passes a power of two
// times 128 (vk_plan_reuse.cpp then plans and records the step again).
uint32_t attn_decode_splits(int64_t tokens, int64_t heads, int64_t n_kv);
// Whether FLASH_ATTN node n has the shapes shaders/flash_attn_vec.comp takes:
// at most 8 query tokens, D in 32..256, an F16 cache with D a multiple of 8
// or a Q8_0 cache with D a multiple of 32 (vk_graph_plan.cpp's attn_vec adds
// the bindings' alignment).
bool attn_vec_shape(const pi_node& n);
// The byte alignment flash_attn_vec.comp needs of the cache's rows and heads
// in FLASH_ATTN node n: 16 for F16 (16-byte pieces), 2 for Q8_0 (the blocks'
// d read as halves of words).
uint32_t attn_vec_alignment(const pi_node& n);
// attn_decode_splits of FLASH_ATTN node n where attn_vec_shape holds; 1 elsewhere.
uint32_t attn_node_splits(const pi_node& n);

}  // namespace polyinfer::vk
