// Which regex list a `tokenizer.ggml.pre` value selects (internal).
#pragma once

#include <string>
#include <vector>

namespace polyinfer {

enum class PreTokenizerKind {
  kDefault,
  kLlama3,
  kDeepseekLlm,
  kDeepseekCoder,
  kFalcon,
  kStarcoder,
  kGpt2,
  kQwen2,
};

// Throws Error(kUnsupported) naming `pre` when it is not known.
PreTokenizerKind pre_tokenizer_kind(const std::string& pre);
std::vector<std::string> pre_tokenizer_regexes(PreTokenizerKind kind);

}  // namespace polyinfer
