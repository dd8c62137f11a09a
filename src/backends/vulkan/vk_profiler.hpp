// Where a Vulkan stream's time goes, for tuning (POLYINFER_VULKAN_PROFILE=1):
// every recorded graph writes a timestamp before and after each dispatch; once a submission's fence
// has signalled, the pairs are summed per op and shape/type, and the host time of each graph_submit
// per what the cache did (record or replay). The tables go to stderr when the stream is destroyed.
#pragma once
#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "polyinfer/backend/abi.h"

namespace polyinfer::vk {

bool profile_requested();

// What the device's compute queue offers for timestamps.
struct TimestampCaps {
  bool usable = false;
  double ns_per_tick = 0;
  uint64_t mask = 0;  // timestampValidBits of the queue family, as a mask
};
TimestampCaps timestamp_caps(VkPhysicalDevice pd, uint32_t queue_family);

class Profiler {
 public:
  Profiler() = default;
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // What dispatch i of a recording runs: nodes [first, first + count) of
  // the graph (count 0: the quantization of node first's activations) with
  // `shader` (a MUL_MAT's key names it: which matrix-vector path ran).
  struct Dispatch {
    uint32_t first, count;
    const char* shader;
  };
  // The key every dispatch is summed under, in order.
  static std::vector<std::string> dispatch_keys(const pi_graph& g,
                                                const std::vector<Dispatch>& dispatches);
  // After the submission's fence signalled: folds the timestamp pairs 2i, 2i+1
  // of `pool` into the sums of keys[i].
  void add_nodes(VkDevice dev, VkQueryPool pool, const std::vector<std::string>& keys,
                 const TimestampCaps& caps);
  void add_submit(const char* action, double us);
  // The tables; empty when nothing was recorded.
  std::string report() const;

 private:
  struct Sum {
    long count = 0;
    double us = 0;
  };
  std::map<std::string, Sum> nodes_, submits_;
  std::vector<uint64_t> ticks_;
};

}  // namespace polyinfer::vk
