// llama.cpp spells some long options with one dash (-ngl, -sm, -ts, -mg), which
// CLI11 2.1 cannot declare; they are rewritten to their long names before parsing.
#pragma once
#include <string>
#include <vector>

namespace polyinfer::cli {

// argv with "-ngl" -> "--n-gpu-layers", "-sm" -> "--split-mode", "-ts" -> "--tensor-split",
// "-mg" -> "--main-gpu" (also "-ngl=N"); everything after "--" is left as is.
std::vector<std::string> expand_llama_aliases(int argc, const char* const* argv);

}  // namespace polyinfer::cli
