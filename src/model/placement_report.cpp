#include "model/placement_report.hpp"

#include "model/mib_text.hpp"

namespace polyinfer {
namespace {

std::string range(int first, int last) {
  return first == last ? "layer " + std::to_string(first)
                       : "layers " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

std::vector<std::string> describe_placement(const LayerMap& map,
                                            const std::vector<const BackendDevice*>& devices) {
  std::vector<std::string> out = map.reasons;
  const int n_layer = static_cast<int>(map.layer_device.size());
  const int n_acc = static_cast<int>(devices.size()) - 1;
  out.push_back("offloaded " + std::to_string(map.n_gpu_layers) + "/" +
                std::to_string(n_layer + 1) + " layers (output included) to " +
                std::to_string(n_acc) + " accelerator(s)");
  for (int first = 0; first < n_layer;) {
    int last = first;
    while (last + 1 < n_layer && map.layer_device[last + 1] == map.layer_device[first]) ++last;
    out.push_back(range(first, last) + " on " + devices[map.layer_device[first]]->name());
    first = last + 1;
  }
  out.push_back("output on " + devices[map.output_device]->name() + ", token embeddings on " +
                devices.back()->name());
  return out;
}

std::vector<std::string> describe_memory(const std::vector<const BackendDevice*>& devices,
                                         const WeightStore& weights, const KvCache& kv,
                                         const GraphExecutor& exec) {
  std::vector<std::string> out;
  for (size_t d = 0; d < devices.size(); ++d) {
    const int i = static_cast<int>(d);
    const pi_device_info& info = devices[d]->info();
    out.push_back(devices[d]->name() + " (" + info.name + "): weights " +
                  mib_text(weights.bytes_on(i)) + ", KV cache " + mib_text(kv.bytes_on(i)) +
                  ", compute " + mib_text(exec.arena_bytes(i)));
  }
  return out;
}

}  // namespace polyinfer
