// Which nodes the executor marks PI_NODE_SCRATCH (graph/scratch.hpp): an
// intermediate read only by op nodes of its own segment is scratch; an output
// (or one of its views), a bound tensor, a tensor a copy reads or a later
// segment of the same device reads (also through a partial rewrite) is not.
#include <gtest/gtest.h>

#include <vector>

#include "graph/scratch.hpp"

namespace polyinfer {
namespace {

constexpr Shape kRow{64, 1, 1, 1};

TensorId add(Graph& g, TensorId a, TensorId b) {
  const TensorId srcs[] = {a, b};
  return g.op(PI_OP_ADD, srcs, GgmlType::F32, kRow);
}

TEST(Scratch, IntermediatesReadInTheirGraphOnly) {
  Graph g;
  const TensorId x = g.input(GgmlType::F32, kRow);
  const TensorId a = add(g, x, x);  // node 0: read by node 1 only
  const TensorId b = add(g, a, x);  // node 1: an output
  g.mark_output(b);
  const TensorId c = add(g, b, b);  // node 2: read by nothing
  (void)c;
  EXPECT_EQ(scratch_destinations(g), (std::vector<bool>{true, false, true}));
}

TEST(Scratch, AViewMarkedOutputKeepsItsOwner) {
  Graph g;
  const TensorId x = g.input(GgmlType::F32, kRow);
  const TensorId a = add(g, x, x);
  g.mark_output(g.view(a, {32, 1, 1, 1}, contiguous_strides(GgmlType::F32, {32, 1, 1, 1}), 128));
  EXPECT_EQ(scratch_destinations(g), (std::vector<bool>{false}));
}

TEST(Scratch, BoundDestinationsAreKept) {
  Graph g;
  const TensorId x = g.input(GgmlType::F32, kRow);
  // A placeholder handle, never dereferenced: only the storage kind matters.
  const TensorId cache = g.bound(GgmlType::F32, kRow, reinterpret_cast<pi_buffer>(16), 0);
  const TensorId srcs[] = {x};
  g.op_into(PI_OP_CPY, srcs, cache);
  EXPECT_EQ(scratch_destinations(g), (std::vector<bool>{false}));
}

TEST(Scratch, WhatACopyOrALaterSegmentReadsIsKept) {
  Graph g;
  const TensorId x = g.input(GgmlType::F32, kRow);
  const TensorId a = add(g, x, x);  // node 0, device 0: copied to device 1
  const TensorId b = add(g, x, x);  // node 1, device 0: read after the copy, device 0 again
  const TensorId a1 = g.scratch(GgmlType::F32, kRow, 1);
  g.copy(a, a1);  // node 2
  g.set_device(1);
  const TensorId c = add(g, a1, a1);  // node 3, device 1: read by node 4 (device 0)
  g.set_device(0);
  const TensorId d = add(g, b, c);  // node 4
  g.mark_output(d);
  const std::vector<bool> s = scratch_destinations(g);
  EXPECT_EQ(s, (std::vector<bool>{false, false, false, false, false}));
}

// A write through a view into part of a tensor leaves the rest as an earlier
// segment wrote it: a reader of the whole then reads that graph's output.
TEST(Scratch, APartialRewriteKeepsTheEarlierWrite) {
  Graph g;
  const TensorId x = g.input(GgmlType::F32, kRow);
  const TensorId a = add(g, x, x);  // node 0, device 0
  g.set_device(1);
  const TensorId b = add(g, x, x);  // node 1, device 1
  g.mark_output(b);
  g.set_device(0);
  const Shape half{32, 1, 1, 1};
  const TensorId lo = g.view(a, half, contiguous_strides(GgmlType::F32, half), 0);
  const TensorId xs[] = {x, x};
  g.op_into(PI_OP_ADD, xs, lo);     // node 2, device 0 again: half of a
  const TensorId c = add(g, a, a);  // node 3: all of a
  g.mark_output(c);
  const std::vector<bool> s = scratch_destinations(g);
  EXPECT_FALSE(s[0]);
  EXPECT_FALSE(s[3]);
}

TEST(Scratch, ADeviceChangeStartsASegment) {
  Graph g;
  const TensorId x = g.input(GgmlType::F32, kRow);
  const TensorId a = add(g, x, x);  // node 0, device 0
  g.set_device(1);
  const TensorId b = add(g, a, a);  // node 1, device 1: reads node 0's output in another graph
  const TensorId c = add(g, b, b);  // node 2, device 1
  g.mark_output(c);
  EXPECT_EQ(scratch_destinations(g), (std::vector<bool>{false, true, false}));
}

}  // namespace
}  // namespace polyinfer
