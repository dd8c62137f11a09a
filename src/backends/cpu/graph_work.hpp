// How much arithmetic a graph asks of the CPU backend, to tell the graphs too
// small to wake the thread pool for. A GPU decode step leaves the CPU one
// node (the token's embedding row, GET_ROWS of a few thousand values, about a
// microsecond); waking 15 pool threads for it cost about 300 us per token on
// a 16-core host, a quarter of a llama-1b decode step on the H200.
#pragma once

#include <cstdint>

#include "polyinfer/backend/abi.h"

namespace polyinfer::cpu {

// Graphs estimated below this many value operations run on the calling
// thread by default (device option "solo=N" sets it; 0 never).
constexpr uint64_t kSoloWork = 32768;

// Value operations of a graph: each node's output elements, times the
// length of the dot product behind each (MUL_MAT: ne[0] of the weights;
// FLASH_ATTN: head size times KV positions); element-wise ops count one.
uint64_t graph_work(const pi_graph& g);

}  // namespace polyinfer::cpu
