#include "polyinfer/tensor_recipe.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

struct FileTypeEntry {
  FileType ft;
  std::string_view name;
  uint32_t llama_ftype;  // LLAMA_FTYPE_MOSTLY_* in llama.h
  GgmlType base;         // the type of every 2-D tensor no rule changes
};

constexpr std::array<FileTypeEntry, 8> kFileTypes = {{
    {FileType::F32, "f32", 0, GgmlType::F32},
    {FileType::F16, "f16", 1, GgmlType::F16},
    {FileType::BF16, "bf16", 32, GgmlType::BF16},
    {FileType::Q8_0, "q8_0", 7, GgmlType::Q8_0},
    {FileType::Q4_0, "q4_0", 2, GgmlType::Q4_0},
    {FileType::Q4_K_M, "q4_k_m", 15, GgmlType::Q4_K},
    {FileType::Q5_K_M, "q5_k_m", 17, GgmlType::Q5_K},
    {FileType::Q6_K, "q6_k", 18, GgmlType::Q6_K},
}};

constexpr int64_t kQkK = 256;  // QK_K: the super-block of the K-quants

const FileTypeEntry& entry(FileType ft) {
  return *std::find_if(kFileTypes.begin(), kFileTypes.end(),
                       [ft](const FileTypeEntry& e) { return e.ft == ft; });
}

bool is_float(FileType ft) {
  return ft == FileType::F32 || ft == FileType::F16 || ft == FileType::BF16;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The output projection: llama.cpp keeps Q8_0 as is and raises the rest to Q6_K
// (Q8_0 directly when the rows do not fill whole K super-blocks).
GgmlType output_type(FileType ft, int64_t ne0) {
  if (ft == FileType::Q8_0 || ne0 % kQkK != 0) return GgmlType::Q8_0;
  return GgmlType::Q6_K;
}

GgmlType recipe_type(FileType ft, const TensorRole& role) {
  if (role.is_output) return output_type(ft, role.ne0);
  const bool k_m = ft == FileType::Q4_K_M || ft == FileType::Q5_K_M;
  const bool more_bits_tensor =
      ends_with(role.name, "attn_v.weight") || ends_with(role.name, "ffn_down.weight");
  if (k_m && more_bits_tensor && use_more_bits(role.layer, role.n_layer)) return GgmlType::Q6_K;
  return entry(ft).base;
}

// llama.cpp's fallback for rows that are not a whole number of K super-blocks.
GgmlType k_fallback(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_K:
      return GgmlType::Q5_0;
    case GgmlType::Q5_K:
      return GgmlType::Q5_1;
    case GgmlType::Q6_K:
      return GgmlType::Q8_0;
    default:
      return t;
  }
}

}  // namespace

std::vector<std::string> file_type_names() {
  std::vector<std::string> names;
  for (const FileTypeEntry& e : kFileTypes) names.emplace_back(e.name);
  return names;
}

FileType parse_file_type(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const FileTypeEntry& e : kFileTypes) {
    if (e.name == lower) return e.ft;
  }
  std::string valid;
  for (const FileTypeEntry& e : kFileTypes)
    valid += (valid.empty() ? "" : ", ") + std::string(e.name);
  throw Error(ErrorCode::kInvalidArgument,
              "unknown --type '" + std::string(name) + "' (choose one of: " + valid + ")");
}

std::string_view file_type_name(FileType ft) {
  return entry(ft).name;
}

uint32_t llama_ftype_id(FileType ft) {
  return entry(ft).llama_ftype;
}

bool use_more_bits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

GgmlType tensor_type(FileType ft, const TensorRole& role) {
  // llama.cpp quantizes only matrices; norms and biases stay F32.
  if (role.n_dims < 2) return GgmlType::F32;
  if (is_float(ft)) return entry(ft).base;
  const GgmlType t = recipe_type(ft, role);
  return role.ne0 % kQkK == 0 ? t : k_fallback(t);
}

}  // namespace polyinfer
