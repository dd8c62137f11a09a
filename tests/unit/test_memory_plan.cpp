// The arena planner never lets two tensors of one device that are alive at the
// same node share bytes, keeps inputs and outputs alive throughout, and reuses
// memory. Graphs spread over two devices (two arenas).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "graph/memory_plan.hpp"

namespace polyinfer {
namespace {

struct Life {
  int64_t first, last;
};

// First writer/reader of each owner and the node from which its bytes may be
// reused (kFuseWindow - 1 nodes past its last reader), as the planner must honour.
std::vector<Life> lifetimes(const Graph& g) {
  const int64_t n = static_cast<int64_t>(g.nodes().size());
  std::vector<Life> life(g.tensors().size(), {n, -1});
  auto touch = [&](TensorId t, int64_t i) {
    Life& l = life[g.tensor(t).base];
    l.first = std::min(l.first, i);
    l.last = std::max(l.last, i);
  };
  for (int64_t i = 0; i < n; ++i) {
    for (TensorId s : g.nodes()[i].src) {
      if (s >= 0) touch(s, i);
    }
    touch(g.nodes()[i].dst, i);
  }
  for (size_t t = 0; t < g.tensors().size(); ++t) {
    const GraphTensor& gt = g.tensors()[t];
    if (gt.kind == StorageKind::kInput) life[t].first = 0;
    if (gt.kind == StorageKind::kInput || gt.output) life[gt.base].last = n;
  }
  for (Life& l : life) {
    if (l.last >= 0) l.last = std::min(l.last + kFuseWindow - 1, n);
  }
  return life;
}

// A random DAG of binary ops over inputs and earlier results, with views.
Graph random_graph(std::mt19937_64& rng) {
  Graph g;
  std::vector<TensorId> pool;
  for (int i = 0; i < 3; ++i)
    pool.push_back(g.input(GgmlType::F32, {int64_t(16 + rng() % 64), 4, 1, 1}));
  const int n_nodes = 5 + static_cast<int>(rng() % 60);
  for (int i = 0; i < n_nodes; ++i) {
    const TensorId a = pool[rng() % pool.size()], b = pool[rng() % pool.size()];
    const int64_t k = 8 + static_cast<int64_t>(rng() % 200);
    const TensorId srcs[] = {a, b};
    const auto dev = static_cast<int32_t>(rng() % 2);
    g.set_device(dev);
    TensorId t;
    if (rng() % 6 == 0) {  // written through a view, as the scheduler's replicas are
      t = g.scratch(GgmlType::F32, {k * 3, 1, 1, 1}, dev);
      g.op_into(PI_OP_ADD, srcs, g.reshape(t, {k, 3, 1, 1}));
    } else {
      t = g.op(PI_OP_ADD, srcs, GgmlType::F32, {k, 3, 1, 1});
    }
    if (rng() % 4 == 0) t = g.reshape(t, {k * 3, 1, 1, 1});
    if (rng() % 5 == 0) g.mark_output(t);
    pool.push_back(t);
  }
  g.mark_output(pool.back());
  return g;
}

TEST(MemoryPlan, LiveTensorsNeverOverlap) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const Graph g = random_graph(rng);
    const MemoryPlan plan = plan_memory(g, 2);
    const std::vector<Life> life = lifetimes(g);
    std::vector<TensorId> owners;
    uint64_t sum = 0;
    for (size_t t = 0; t < g.tensors().size(); ++t) {
      const GraphTensor& gt = g.tensors()[t];
      if (gt.kind == StorageKind::kView || gt.kind == StorageKind::kBound || life[t].last < 0)
        continue;
      owners.push_back(static_cast<TensorId>(t));
      sum += g.nbytes(static_cast<TensorId>(t));
      EXPECT_EQ(plan.offset[t] % kArenaAlign, 0u);
      EXPECT_LE(plan.offset[t] + g.nbytes(static_cast<TensorId>(t)), plan.arena_bytes[gt.device]);
    }
    for (size_t i = 0; i < owners.size(); ++i) {
      for (size_t j = i + 1; j < owners.size(); ++j) {
        const TensorId a = owners[i], b = owners[j];
        if (g.tensor(a).device != g.tensor(b).device) continue;
        const bool same_time = life[a].first <= life[b].last && life[b].first <= life[a].last;
        const bool same_bytes = plan.offset[a] < plan.offset[b] + g.nbytes(b) &&
                                plan.offset[b] < plan.offset[a] + g.nbytes(a);
        ASSERT_FALSE(same_time && same_bytes)
            << "seed " << seed << ": tensors " << a << " and " << b;
      }
    }
    // Reuse must happen on long chains (long against the window that keeps
    // bytes after their last reader): the arena stays below the sum of sizes.
    if (g.nodes().size() > 10 * kFuseWindow) {
      EXPECT_LT(plan.arena_bytes[0] + plan.arena_bytes[1], sum) << "seed " << seed;
    }
  }
}

// A decode step one position later: the mask input is one value longer.
// Every intermediate keeps its offset (so a backend replays the step's cached
// work), and the inputs stay clear of the intermediates.
Graph decode_like(int64_t n_kv) {
  Graph g;
  g.input(GgmlType::I32, {1, 1, 1, 1});  // the positions, ahead of the mask
  const TensorId mask = g.input(GgmlType::F32, {n_kv, 1, 1, 1});
  const TensorId x = g.input(GgmlType::F32, {64, 1, 1, 1});
  TensorId t = x;
  for (int i = 0; i < 6; ++i) {
    const TensorId srcs[] = {t, i % 2 ? x : t};
    t = g.op(PI_OP_ADD, srcs, GgmlType::F32, {64, 1, 1, 1});
  }
  const TensorId m_srcs[] = {mask, mask};
  g.mark_output(g.op(PI_OP_ADD, m_srcs, GgmlType::F32, {n_kv, 1, 1, 1}));
  g.mark_output(t);
  return g;
}

TEST(MemoryPlan, GrowingMaskMovesNoIntermediate) {
  const Graph a = decode_like(15), b = decode_like(17), c = decode_like(1000);
  const MemoryPlan pa = plan_memory(a), pb = plan_memory(b), pc = plan_memory(c);
  uint64_t first_input = ~uint64_t{0}, intermediates_end = 0;
  for (size_t t = 0; t < a.tensors().size(); ++t) {
    const GraphTensor& gt = a.tensors()[t];
    if (gt.kind == StorageKind::kInput) {
      first_input = std::min(first_input, pa.offset[t]);
      EXPECT_EQ(pa.offset[t], pb.offset[t]) << "input " << t;
    }
    if (gt.kind != StorageKind::kIntermediate) continue;
    // The last node's output is sized by the mask: it may move.
    if (t + 1 < a.tensors().size()) {
      EXPECT_EQ(pa.offset[t], pb.offset[t]) << "tensor " << t;
      EXPECT_EQ(pa.offset[t], pc.offset[t]) << "tensor " << t;
    }
    intermediates_end =
        std::max(intermediates_end, pa.offset[t] + a.nbytes(static_cast<TensorId>(t)));
  }
  EXPECT_GE(first_input, intermediates_end);
}

}  // namespace
}  // namespace polyinfer
