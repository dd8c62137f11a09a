// Which ggml type each tensor gets for a requested file type: llama.cpp's
// llama_tensor_get_type (src/llama-quant.cpp), restricted to the file types
// `polyinfer gen-model` offers. See docs/GEN_MODEL.md for the rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "polyinfer/dtype.hpp"

namespace polyinfer {

enum class FileType { F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K };

// "f32", "q4_k_m", ... (lower case, as on the command line).
std::vector<std::string> file_type_names();
// Case-insensitive; throws Error(kInvalidArgument) naming the valid choices.
FileType parse_file_type(std::string_view name);
std::string_view file_type_name(FileType ft);
// general.file_type: llama.cpp's LLAMA_FTYPE_* id.
uint32_t llama_ftype_id(FileType ft);

// What the recipe needs to know about one tensor.
struct TensorRole {
  std::string name;  // e.g. "blk.3.attn_v.weight"
  int n_dims;        // 1 for norms and biases
  int64_t ne0;       // row length (ggml ne[0])
  int layer;         // block index, -1 outside the blocks
  int n_layer;       // block count
  bool is_output;    // output.weight, or token_embd.weight when tied
};

// llama.cpp's use_more_bits: the layers whose attn_v/ffn_down get Q6_K in *_K_M.
bool use_more_bits(int layer, int n_layer);
GgmlType tensor_type(FileType ft, const TensorRole& role);

}  // namespace polyinfer
