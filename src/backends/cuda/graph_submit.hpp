// graph_submit and supports of the CUDA plugin's vtable: the op table, the
// eager enqueue of a graph's nodes, and CUDA graphs (graph_cache.hpp) for
// repeated submits.
#pragma once

#include "polyinfer/backend/abi.h"

namespace polyinfer::cuda {

int supports(pi_device dev, const pi_node* node);
// Enqueues every node's kernels on the stream and returns without waiting.
pi_status graph_submit(pi_stream s, const pi_graph* graph);
// graph_submit's host work ahead of graph_submit_prepared (abi.h): node
// checks, fused units, per-token fields, signature, cache lookup, planned for
// a stream the host will have synchronized by the launch; the launch plans
// again where it has not, or where the graph needs more scratch.
pi_status graph_prepare(pi_stream s, const pi_graph* graph);
pi_status graph_submit_prepared(pi_stream s);

}  // namespace polyinfer::cuda
