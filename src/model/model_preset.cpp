#include "polyinfer/model_preset.hpp"

#include <array>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

// Shapes from the checkpoints' config.json (converted to llama.cpp metadata).
// llama-1b's vocabulary is 32000 rather than Llama-3.2's 128256 because the
// project's llama.cpp peer benchmarks used 32000 for this shape (--vocab overrides).
const std::array<ModelPreset, 4> kPresets = {{
    {"tiny", "llama", 256, 2, 4, 2, 512, 0, 10000.0f, 1e-5f, 512, false, false},
    {"llama-1b", "llama", 2048, 16, 32, 8, 8192, 32000, 500000.0f, 1e-5f, 131072, true, false},
    {"llama-8b", "llama", 4096, 32, 32, 8, 14336, 128256, 500000.0f, 1e-5f, 8192, false, false},
    {"qwen2-0.5b", "qwen2", 896, 24, 14, 2, 4864, 151936, 1000000.0f, 1e-6f, 32768, true, true},
}};

std::string joined_names() {
  std::string s;
  for (const ModelPreset& p : kPresets) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

ModelPreset apply_arch(ModelPreset p, const std::string& arch) {
  if (p.name == "tiny") {
    if (arch != "llama" && arch != "qwen2") {
      throw Error(ErrorCode::kInvalidArgument,
                  "unknown --arch '" + arch + "' (choose llama or qwen2)");
    }
    p.arch = arch;
    p.qkv_bias = arch == "qwen2";
  } else if (arch != p.arch) {
    throw Error(ErrorCode::kInvalidArgument, "preset " + p.name + " is a " + p.arch +
                                                 " model; --arch " + arch + " does not fit it");
  }
  return p;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const ModelPreset& p : kPresets) names.push_back(p.name);
  return names;
}

ModelPreset resolve_preset(const std::string& name, const std::optional<std::string>& arch,
                           const std::optional<int64_t>& n_vocab) {
  for (const ModelPreset& p : kPresets) {
    if (p.name != name) continue;
    ModelPreset out = arch ? apply_arch(p, *arch) : p;
    if (n_vocab) {
      // 256 byte tokens + bos + eos is the smallest vocabulary the tokenizer has.
      if (*n_vocab < 258) {
        throw Error(ErrorCode::kInvalidArgument,
                    "--vocab " + std::to_string(*n_vocab) + " is below the minimum of 258");
      }
      out.n_vocab = *n_vocab;
    }
    return out;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown preset '" + name + "' (choose one of: " + joined_names() + ")");
}

}  // namespace polyinfer
