// Where a Vulkan stream's time goes, for tuning. POLYINFER_VULKAN_PROFILE=1:
// every recorded graph writes a timestamp before and after each dispatch; once a submission's fence
// has signalled, the pairs are summed per op and shape/type, and the host time of each graph_submit
// per what the cache did (record or replay). POLYINFER_VULKAN_PROFILE=span: one timestamp where a
// graph starts and one where it ends, with no barrier added, for the GPU time of whole graphs and
// the time between one graph's end and the next one's start (the GPU waiting on uploads, reads
// back and the host). The tables go to stderr when the stream is destroyed.
#pragma once
#include <vulkan/vulkan.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "polyinfer/backend/abi.h"

namespace polyinfer::vk {

enum class ProfileMode : uint8_t {
  kOff,
  kNodes,  // POLYINFER_VULKAN_PROFILE=1
  kSpan,   // POLYINFER_VULKAN_PROFILE=span
};
ProfileMode profile_requested();

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
    std::array<uint32_t, 2> folded;  // DispatchPlan::folded
  };
  // The key every dispatch is summed under, in order.
  static std::vector<std::string> dispatch_keys(const pi_graph& g,
                                                const std::vector<Dispatch>& dispatches);
  // After the submission's fence signalled: folds the timestamp pairs 2i, 2i+1
  // of `pool` into the sums of keys[i].
  void add_nodes(VkDevice dev, VkQueryPool pool, const std::vector<std::string>& keys,
                 const TimestampCaps& caps);
  // After the submission's fence signalled: timestamps 0 (the graph's start)
  // and 1 (its end) of `pool`; graphs come in the order they were queued.
  void add_span(VkDevice dev, VkQueryPool pool, const TimestampCaps& caps);
  // kSpan, host side: a read back has returned (its fence seen signalled),
  // then a graph has been queued: the time between, per graph.
  void read_returned();
  void graph_queued();
  void add_submit(const char* action, double us);
  // The tables; empty when nothing was recorded.
  std::string report() const;

 private:
  void span_lines(std::string& out) const;

  struct Sum {
    long count = 0;
    double us = 0;
  };
  std::map<std::string, Sum> nodes_, submits_;
  std::vector<uint64_t> ticks_;
  // kSpan: each graph's GPU time, and the time from the end of the graph
  // before it (us).
  std::vector<double> spans_, gaps_, host_gaps_;
  std::optional<std::chrono::steady_clock::time_point> read_at_;
  uint64_t last_end_ = 0;
  bool have_end_ = false;
};

}  // namespace polyinfer::vk
