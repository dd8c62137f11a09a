// The --verbose lines that show where a model went: how -ngl was resolved, the
// layer -> device map (in ranges), and per device the bytes of weights, KV
// cache and compute arena, so that an idle accelerator cannot go unnoticed.
#pragma once
#include <string>
#include <vector>

#include "backend/device.hpp"
#include "graph/executor.hpp"
#include "model/kv_cache.hpp"
#include "model/layer_placement.hpp"
#include "model/weight_store.hpp"

namespace polyinfer {

// How -ngl was resolved and the layer -> device map.
std::vector<std::string> describe_placement(const LayerMap& map,
                                            const std::vector<const BackendDevice*>& devices);
// Per device: weights, KV cache and compute arena bytes.
std::vector<std::string> describe_memory(const std::vector<const BackendDevice*>& devices,
                                         const WeightStore& weights, const KvCache& kv,
                                         const GraphExecutor& exec);

}  // namespace polyinfer
