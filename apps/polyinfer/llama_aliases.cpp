#include "llama_aliases.hpp"

#include <string_view>
#include <utility>

namespace polyinfer::cli {

std::vector<std::string> expand_llama_aliases(int argc, const char* const* argv) {
  static const std::pair<std::string_view, std::string_view> kAliases[] = {
      {"-ngl", "--n-gpu-layers"},
      {"-sm", "--split-mode"},
      {"-ts", "--tensor-split"},
      {"-mg", "--main-gpu"}};
  std::vector<std::string> out;
  bool options_ended = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") options_ended = true;
    for (const auto& [alias, name] : kAliases) {
      if (options_ended || i == 0) break;
      if (arg == alias) {
        arg = name;
      } else if (arg.size() > alias.size() && arg.compare(0, alias.size(), alias) == 0 &&
                 arg[alias.size()] == '=') {
        arg = std::string(name) + arg.substr(alias.size());
      }
    }
    out.push_back(std::move(arg));
  }
  return out;
}

}  // namespace polyinfer::cli
