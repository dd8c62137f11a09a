// How the executor cuts a graph into the graphs it submits, and which nodes
// write scratch destinations (abi.h's PI_NODE_SCRATCH): tensors that only
// later nodes of the same submitted graph read, so that a backend computing
// every reader without them may leave them unwritten.
#pragma once
#include <vector>

#include "graph/graph.hpp"

namespace polyinfer {

// Per node of g (its order): the index of the graph GraphExecutor submits it
// in. A run of op nodes of one device between copies is one graph; a copy
// node is one of its own.
std::vector<int> submit_segments(const Graph& g);

// Per node of g (its order): whether its destination is scratch. It is when
// the destination's owner is an intermediate, neither it nor any view of it
// is an output, and op nodes of the node's own segment read it only: a copy
// node reads it after the graph that wrote it, as does a later segment
// (submit_segments) of the same device.
std::vector<bool> scratch_destinations(const Graph& g);

}  // namespace polyinfer
