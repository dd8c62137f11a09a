// A stream's last graph plan, reused for the next decode step. Consecutive
// decode steps submit graphs that differ only in their decode fields: the
// attention's KV length (FLASH_ATTN's K and V views and its mask grow by a
// position) and where the cache writes go (the CPY destinations' offsets).
// The shaders read those as parameter words, so the plan (units, pipelines,
// bindings, barriers, the recording's key) stays, and planning it again cost
// 170-218 us of host time per token on llama-1b and 291-407 us on llama-8b
// (H200 host, session 18), with the GPU idle. So when a graph equals the
// last one but for those fields, the plan is kept after checks on what the
// fields could change: the units (planned again), the nodes' own checks, the
// bindings of the moved tensors, the attention's shader and that no two
// dispatches between barriers now touch the same bytes; only their tensors,
// offsets and byte ranges are refreshed.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/vulkan/vk_graph_plan.hpp"

namespace polyinfer::vk {

class PlanReuse {
 public:
  // Writes g's plan over *plan, which must be what the last call left there:
  // that plan refreshed when g differs from the graph it was made for only
  // in the decode fields and the checks hold (returns true), else a new
  // plan_graph (which throws for an unsupported graph; returns false).
  bool plan(pi_device dev, const pi_graph& g, bool serialize, GraphPlan* plan);

  // Which plan the last call gave, unique in the process: a recording whose
  // parameter words were written for this epoch needs only the words of
  // field_dispatches() written again when the plan is kept.
  uint64_t epoch() const { return epoch_; }
  const std::vector<uint32_t>& field_dispatches() const { return field_dispatches_; }

 private:
  // A place of a decode-field tensor in the plan: node `node`'s tensor
  // `tensor` (0..3 a source, 4 the destination) is dispatch `dispatch`'s
  // slot `slot` and/or its byte range `range` (-1: not).
  struct Site {
    uint32_t dispatch, node;
    uint8_t tensor;
    int8_t slot, range;
  };

  bool refresh(pi_device dev, const pi_graph& g, GraphPlan* plan) const;
  bool refresh_sites(pi_device dev, const pi_graph& g, GraphPlan* plan) const;
  void remember(const pi_graph& g, const GraphPlan& plan, const Features& features);
  void add_sites(const pi_graph& g, const DispatchPlan& d, uint32_t i, uint32_t j);

  std::vector<uint64_t> signature_;    // the last planned graph's words (vk_plan_reuse.cpp)
  std::vector<uint32_t> field_nodes_;  // nodes with decode fields
  std::vector<OpPlan> field_ops_;      // their plan_node results
  std::vector<Site> sites_;
  std::vector<uint32_t> field_dispatches_;  // the dispatches of sites_, once each
  bool serialize_ = false;
  uint64_t freed_ = 0;  // pi_device_s::buffers_freed when the plan was made
  uint64_t epoch_ = 0;
};

}  // namespace polyinfer::vk
