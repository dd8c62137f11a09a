// How a model is named in reports (llama-bench's "llama 1B Q4_0" columns).
#pragma once
#include <cstdint>
#include <string>

#include "polyinfer/gguf.hpp"
#include "polyinfer/session.hpp"

namespace polyinfer {

// "1B", "494M", "260K": the parameter count rounded as llama.cpp's size labels.
std::string size_label(uint64_t n_params);
// llama.cpp's name of a general.file_type (LLAMA_FTYPE_*) id, e.g. 15 -> "Q4_K - Medium".
std::string file_type_label(uint64_t ftype);

ModelSummary summarize_model(const GgufFile& file);

}  // namespace polyinfer
