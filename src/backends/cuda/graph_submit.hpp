// graph_submit and supports of the CUDA plugin's vtable: the op table, the
// eager enqueue of a graph's nodes, and CUDA graphs (graph_cache.hpp) for
// repeated submits.
#pragma once

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

int supports(pi_device dev, const pi_node* node);
// Enqueues every node's kernels on the stream and returns without waiting.
pi_status graph_submit(pi_stream s, const pi_graph* graph);

}  // namespace polyinfer::cuda
