#include "placement_options.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <vector>

#include "polyinfer/error.hpp"

namespace polyinfer::cli {
namespace {

int parse_ngl(const std::string& v) {
  if (v == "auto") return kGpuLayersAuto;
  if (v == "all") return kGpuLayersAll;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || n < 0 || n >= kGpuLayersAll) {
    throw Error(ErrorCode::kInvalidArgument,
                "-ngl takes a layer count >= 0, 'all' or 'auto', not '" + v + "'");
  }
  return static_cast<int>(n);
}

std::vector<double> parse_ratios(const std::string& v) {
  std::vector<double> out;
  for (size_t at = 0; at <= v.size();) {
    const size_t comma = std::min(v.find(',', at), v.size());
    const std::string item = v.substr(at, comma - at);
    at = comma + 1;
    char* end = nullptr;
    errno = 0;
    const double x = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || errno != 0 || !(x >= 0) || x > 1e30) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--tensor-split takes non-negative ratios like 3,1, not '" + v + "'");
    }
    out.push_back(x);
  }
  return out;
}

}  // namespace

void add_placement_options(CLI::App& cmd, PlacementFlags& flags) {
  cmd.add_option("--n-gpu-layers,--gpu-layers", flags.n_gpu_layers,
                 "(-ngl) Layers on the accelerators: a count (the last N; layers + 1 includes the "
                 "output), all, or auto (as many as fit in free device memory)")
      ->capture_default_str();
  cmd.add_option("--split-mode", flags.split_mode,
                 "(-sm) Several accelerators: none (main GPU only) or layer (spread the layers)")
      ->capture_default_str();
  cmd.add_option("--tensor-split", flags.tensor_split,
                 "(-ts) Share of the offloaded layers per accelerator, e.g. 3,1 (default: by free "
                 "memory)");
  cmd.add_option("--main-gpu", flags.main_gpu,
                 "(-mg) The accelerator (index among those selected) for --split-mode none")
      ->capture_default_str();
}

PlacementParams placement_params(const PlacementFlags& flags) {
  PlacementParams p;
  p.n_gpu_layers = parse_ngl(flags.n_gpu_layers);
  if (flags.split_mode == "none") {
    p.split_mode = SplitMode::kNone;
  } else if (flags.split_mode != "layer") {
    throw Error(ErrorCode::kInvalidArgument,
                "--split-mode must be none or layer, not '" + flags.split_mode + "'");
  }
  if (!flags.tensor_split.empty()) p.tensor_split = parse_ratios(flags.tensor_split);
  if (flags.main_gpu < 0) throw Error(ErrorCode::kInvalidArgument, "--main-gpu must be >= 0");
  p.main_gpu = flags.main_gpu;
  return p;
}

}  // namespace polyinfer::cli
