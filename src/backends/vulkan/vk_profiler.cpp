#include "backends/vulkan/vk_profiler.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

namespace polyinfer::vk {
namespace {

const char* type_name(uint32_t t) {
  switch (t) {
    case 0:
      return "f32";
    case 1:
      return "f16";
    case 2:
      return "q4_0";
    case 3:
      return "q4_1";
    case 6:
      return "q5_0";
    case 7:
      return "q5_1";
    case 8:
      return "q8_0";
    case 10:
      return "q2_K";
    case 11:
      return "q3_K";
    case 12:
      return "q4_K";
    case 13:
      return "q5_K";
    case 14:
      return "q6_K";
    case 26:
      return "i32";
    case 30:
      return "bf16";
    default:
      return "t?";
  }
}

// Microseconds from tick a to tick b: counters wrap at timestampValidBits,
// so the difference is taken modulo that width.
double us_between(uint64_t a, uint64_t b, const TimestampCaps& caps) {
  return static_cast<double>((b - a) & caps.mask) * caps.ns_per_tick * 1e-3;
}

long long ll(int64_t v) {
  return static_cast<long long>(v);
}

// Op, types and the shape that sets the work (MUL_MAT: and the shader).
// FLASH_ATTN leaves out the KV length, which grows every decode step and
// would give each step a row.
std::string node_key(const pi_node& n, const char* shader) {
  const pi_tensor &s0 = n.src[0], &s1 = n.src[1], &d = n.dst;
  char buf[192];
  switch (n.op) {
    case PI_OP_MUL_MAT:
      std::snprintf(buf, sizeof buf, "MUL_MAT %s %lldx%lld * %lld %s", type_name(s0.type),
                    ll(s0.ne[0]), ll(s0.ne[1]), ll(s1.ne[1] * s1.ne[2] * s1.ne[3]), shader);
      break;
    case PI_OP_FLASH_ATTN:
      std::snprintf(buf, sizeof buf, "FLASH_ATTN %s D%lld H%lld/%lld T%lld", type_name(s1.type),
                    ll(s0.ne[0]), ll(s0.ne[2]), ll(s1.ne[2]), ll(s0.ne[1]));
      break;
    default: {
      const bool convert = s0.type != d.type;
      std::snprintf(buf, sizeof buf, "%s %s%s%s [%lld,%lld,%lld,%lld]", pi_op_name(n.op),
                    type_name(s0.type), convert ? "->" : "", convert ? type_name(d.type) : "",
                    ll(d.ne[0]), ll(d.ne[1]), ll(d.ne[2]), ll(d.ne[3]));
      break;
    }
  }
  return buf;
}

// A fused dispatch: its ops joined by '+', then its last node's key without
// the op; a quantization: the activations' shape (a fused one: its SWIGLU's key).
std::string dispatch_key(const pi_graph& g, const Profiler::Dispatch& d) {
  if (d.count == 0) {
    const pi_tensor& a = g.nodes[d.first].src[1];
    char buf[96];
    std::snprintf(buf, sizeof buf, "QUANTIZE_Q8 f32 [%lld,%lld,%lld,%lld]", ll(a.ne[0]),
                  ll(a.ne[1]), ll(a.ne[2]), ll(a.ne[3]));
    return buf;
  }
  const pi_node& last = g.nodes[d.first + d.count - 1];
  // A SWIGLU that the quantization of its output computes (kSwigluQuant).
  if (d.count == 1 && std::string_view(d.shader).starts_with("quantize_q8"))
    return "QUANTIZE_Q8+" + node_key(last, d.shader);
  // The unit's ops, then those a product's epilogue folds (Unit::rope, Unit::cache).
  std::string key;
  for (uint32_t k = 0; k < d.count; ++k) {
    if (k > 0) key += '+';
    key += pi_op_name(g.nodes[d.first + k].op);
  }
  for (uint32_t j : d.folded)
    if (j != 0) key += std::string("+") + pi_op_name(g.nodes[j].op);
  const std::string tail = node_key(last, d.shader);
  return key + tail.substr(std::strlen(pi_op_name(last.op)));
}

}  // namespace

ProfileMode profile_requested() {
  const char* e = std::getenv("POLYINFER_VULKAN_PROFILE");
  if (e == nullptr) return ProfileMode::kOff;
  if (std::strcmp(e, "1") == 0) return ProfileMode::kNodes;
  if (std::strcmp(e, "span") == 0) return ProfileMode::kSpan;
  return ProfileMode::kOff;
}

TimestampCaps timestamp_caps(VkPhysicalDevice pd, uint32_t queue_family) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(pd, &p);
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, nullptr);
  std::vector<VkQueueFamilyProperties> fam(n);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fam.data());
  TimestampCaps c;
  // timestampComputeAndGraphics promises timestamps on every compute queue;
  // without it the family's own valid bits decide (0: none).
  const uint32_t bits = queue_family < n ? fam[queue_family].timestampValidBits : 0;
  c.usable = bits > 0 && p.limits.timestampPeriod > 0;
  c.ns_per_tick = p.limits.timestampPeriod;
  c.mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  return c;
}

std::vector<std::string> Profiler::dispatch_keys(const pi_graph& g,
                                                 const std::vector<Dispatch>& dispatches) {
  std::vector<std::string> keys;
  keys.reserve(dispatches.size());
  for (const Dispatch& d : dispatches) keys.push_back(dispatch_key(g, d));
  return keys;
}

void Profiler::add_nodes(VkDevice dev, VkQueryPool pool, const std::vector<std::string>& keys,
                         const TimestampCaps& caps) {
  if (keys.empty()) return;
  const uint32_t n = static_cast<uint32_t>(2 * keys.size());
  ticks_.resize(n);
  // The fence has signalled, so every query is available: no WAIT flag.
  if (vkGetQueryPoolResults(dev, pool, 0, n, n * sizeof(uint64_t), ticks_.data(), sizeof(uint64_t),
                            VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) {
    return;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    Sum& s = nodes_[keys[i]];
    ++s.count;
    s.us += us_between(ticks_[2 * i], ticks_[2 * i + 1], caps);
  }
}

void Profiler::add_span(VkDevice dev, VkQueryPool pool, const TimestampCaps& caps) {
  uint64_t t[2];
  if (vkGetQueryPoolResults(dev, pool, 0, 2, sizeof t, t, sizeof(uint64_t),
                            VK_QUERY_RESULT_64_BIT) != VK_SUCCESS) {
    return;
  }
  spans_.push_back(us_between(t[0], t[1], caps));
  if (have_end_) gaps_.push_back(us_between(last_end_, t[0], caps));
  last_end_ = t[1];
  have_end_ = true;
}

void Profiler::read_returned() {
  read_at_ = std::chrono::steady_clock::now();
}

void Profiler::graph_queued() {
  if (!read_at_) return;
  const std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - *read_at_;
  host_gaps_.push_back(us.count());
  read_at_.reset();
}

void Profiler::add_submit(const char* action, double us) {
  Sum& s = submits_[action];
  ++s.count;
  s.us += us;
}

void Profiler::span_lines(std::string& out) const {
  char line[200];
  const auto row = [&](const char* what, std::vector<double> v) {
    if (v.empty()) return;
    double sum = 0;
    for (double x : v) sum += x;
    std::sort(v.begin(), v.end());
    std::snprintf(line, sizeof line, "  %-52s %8zu %10.1f %10.1f\n", what, v.size(),
                  sum / static_cast<double>(v.size()), v[v.size() / 2]);
    out += line;
  };
  if (spans_.empty()) return;
  out += "Vulkan profile, graphs on the GPU (us):\n";
  std::snprintf(line, sizeof line, "  %-52s %8s %10s %10s\n", "", "count", "mean", "median");
  out += line;
  row("graph, first command to last", spans_);
  // Uploads and reads back run in this time; the rest is the GPU waiting on the host.
  row("from a graph's end to the next one's start", gaps_);
  // The host's share of that gap: what it does between the logits' arrival
  // and the next step's launch (the session's sampling and inputs included).
  row("host: from a read's return to the next graph queued", host_gaps_);
}

std::string Profiler::report() const {
  std::string out;
  char line[320];
  const auto table = [&](const char* title, const std::map<std::string, Sum>& sums) {
    if (sums.empty()) return;
    std::vector<std::pair<std::string, Sum>> rows(sums.begin(), sums.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
    double total = 0;
    for (const auto& r : rows) total += r.second.us;
    std::snprintf(line, sizeof line, "Vulkan profile, %s: %.1f us in all\n", title, total);
    out += line;
    std::snprintf(line, sizeof line, "  %12s %7s %8s %10s  %s\n", "total us", "share", "count",
                  "mean us", "key");
    out += line;
    for (const auto& [key, s] : rows) {
      std::snprintf(line, sizeof line, "  %12.1f %6.1f%% %8ld %10.2f  %s\n", s.us,
                    total > 0 ? 100.0 * s.us / total : 0.0, s.count, s.us / s.count, key.c_str());
      out += line;
    }
  };
  table("GPU time per node", nodes_);
  span_lines(out);
  table("host time per graph_submit", submits_);
  return out;
}

}  // namespace polyinfer::vk
