#include "model/layer_placement.hpp"

#include <algorithm>
#include <cmath>

#include "model/mib_text.hpp"
#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

uint64_t margin(const PlacementDevice& d) {
  return std::max<uint64_t>(kAutoMarginMin, d.memory_total / 20);
}

// The share of the offloaded units each accelerator takes (0: none).
std::vector<double> ratios(const std::vector<PlacementDevice>& devs, const PlacementParams& p) {
  const size_t n_acc = devs.size() - 1;
  std::vector<double> r(n_acc, 0.0);
  if (p.main_gpu < 0 || static_cast<size_t>(p.main_gpu) >= n_acc) {
    throw Error(ErrorCode::kInvalidArgument, "--main-gpu " + std::to_string(p.main_gpu) +
                                                 " is out of range: " + std::to_string(n_acc) +
                                                 " accelerator(s) selected");
  }
  if (p.split_mode == SplitMode::kNone) {
    r[p.main_gpu] = 1.0;
    return r;
  }
  if (p.tensor_split.empty()) {
    for (size_t i = 0; i < n_acc; ++i) r[i] = static_cast<double>(devs[i].memory_free) + 1.0;
    return r;
  }
  if (p.tensor_split.size() > n_acc) {
    throw Error(ErrorCode::kInvalidArgument,
                "--tensor-split has " + std::to_string(p.tensor_split.size()) + " ratios for " +
                    std::to_string(n_acc) + " accelerator(s)");
  }
  double sum = 0;
  for (size_t i = 0; i < p.tensor_split.size(); ++i) {
    if (!(p.tensor_split[i] >= 0) || !std::isfinite(p.tensor_split[i]))
      throw Error(ErrorCode::kInvalidArgument, "--tensor-split ratios must be >= 0");
    r[i] = p.tensor_split[i];
    sum += r[i];
  }
  if (sum <= 0) throw Error(ErrorCode::kInvalidArgument, "--tensor-split ratios are all 0");
  return r;
}

// Accelerator of each of n offloaded units, in cumulative proportion to r
// (the first accelerator takes the first units).
std::vector<int> split_units(int n, const std::vector<double>& r) {
  double total = 0;
  for (double x : r) total += x;
  std::vector<int> dev(static_cast<size_t>(n));
  double cum = 0;
  int k = 0;
  for (size_t j = 0; j < r.size(); ++j) {
    cum += r[j];
    const int end = j + 1 == r.size() ? n : static_cast<int>(std::lround(n * cum / total));
    for (; k < end; ++k) dev[static_cast<size_t>(k)] = static_cast<int>(j);
  }
  return dev;
}

// The units -ngl n offloads, in order (llama.cpp): the last min(n, n_layer) layers, then the
// output (unit n_layer) once n exceeds n_layer.
std::vector<int> offloaded_units(int n, int n_layer) {
  std::vector<int> units;
  for (int il = std::max(n_layer - n, 0); il < n_layer; ++il) units.push_back(il);
  if (n > n_layer) units.push_back(n_layer);
  return units;
}

// Bytes each accelerator would hold with n units offloaded.
std::vector<uint64_t> load_of(int n, int n_layer, const ModelFootprint& size,
                              const std::vector<double>& r) {
  std::vector<uint64_t> bytes(r.size(), 0);
  const std::vector<int> units = offloaded_units(n, n_layer);
  const std::vector<int> dev = split_units(static_cast<int>(units.size()), r);
  for (size_t k = 0; k < units.size(); ++k) {
    bytes[static_cast<size_t>(dev[k])] +=
        units[k] == n_layer ? size.output_bytes : size.layer_bytes;
  }
  return bytes;
}

bool fits(const std::vector<uint64_t>& load, const std::vector<PlacementDevice>& devs) {
  for (size_t j = 0; j < load.size(); ++j) {
    if (load[j] > 0 && load[j] + margin(devs[j]) > devs[j].memory_free) return false;
  }
  return true;
}

int resolve_auto(int n_units, const ModelFootprint& size, const std::vector<PlacementDevice>& devs,
                 const std::vector<double>& r, std::vector<std::string>& reasons) {
  int n = n_units;
  while (n > 0 && !fits(load_of(n, n_units - 1, size, r), devs)) --n;
  std::string free;
  for (size_t j = 0; j < r.size(); ++j) {
    if (r[j] > 0) {
      free += (free.empty() ? "" : ", ") + devs[j].name + " " + mib_text(devs[j].memory_free) +
              " free (keeping " + mib_text(margin(devs[j])) + ")";
    }
  }
  reasons.push_back("-ngl auto: " + std::to_string(n) + " of " + std::to_string(n_units) +
                    " layers (output included, " + mib_text(size.layer_bytes) +
                    " per layer with its KV cache) fit: " + free);
  return n;
}

}  // namespace

LayerMap place_layers(int n_layer, const ModelFootprint& size,
                      const std::vector<PlacementDevice>& devices, const PlacementParams& p) {
  if (devices.empty()) throw Error(ErrorCode::kInvalidArgument, "place_layers: no devices");
  if (p.n_gpu_layers < kGpuLayersAuto) {
    throw Error(ErrorCode::kInvalidArgument, "-ngl must be a count >= 0, 'all' or 'auto', not " +
                                                 std::to_string(p.n_gpu_layers));
  }
  const int cpu = static_cast<int>(devices.size()) - 1;
  const int n_units = n_layer + 1;
  LayerMap m;
  m.layer_device.assign(static_cast<size_t>(n_layer), cpu);
  m.output_device = cpu;
  if (cpu == 0) {
    m.reasons.push_back("no accelerator selected: every layer on " + devices[0].name);
    return m;
  }
  const std::vector<double> r = ratios(devices, p);
  const int n = p.n_gpu_layers == kGpuLayersAuto
                    ? resolve_auto(n_units, size, devices, r, m.reasons)
                    : std::min(p.n_gpu_layers, n_units);
  const std::vector<int> units = offloaded_units(n, n_layer);
  const std::vector<int> dev = split_units(static_cast<int>(units.size()), r);
  for (size_t k = 0; k < units.size(); ++k) {
    if (units[k] == n_layer) {
      m.output_device = dev[k];
    } else {
      m.layer_device[static_cast<size_t>(units[k])] = dev[k];
    }
  }
  m.n_gpu_layers = n;
  return m;
}

}  // namespace polyinfer
