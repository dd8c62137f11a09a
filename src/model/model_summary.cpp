#include "model/model_summary.hpp"

#include <cmath>
#include <cstdio>
#include <map>

#include "polyinfer/model_info.hpp"

namespace polyinfer {

std::string size_label(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull) {
    std::snprintf(buf, sizeof buf, "%.0fB", std::round(n / 1e9));
  } else if (n >= 1000000ull) {
    std::snprintf(buf, sizeof buf, "%.0fM", std::round(n / 1e6));
  } else {
    std::snprintf(buf, sizeof buf, "%.0fK", std::round(n / 1e3));
  }
  return buf;
}

std::string file_type_label(uint64_t ftype) {
  static const std::map<uint64_t, std::string> kNames = {
      {0, "all F32"},        {1, "F16"},
      {2, "Q4_0"},           {3, "Q4_1"},
      {7, "Q8_0"},           {8, "Q5_0"},
      {9, "Q5_1"},           {10, "Q2_K - Medium"},
      {11, "Q3_K - Small"},  {12, "Q3_K - Medium"},
      {13, "Q3_K - Large"},  {14, "Q4_K - Small"},
      {15, "Q4_K - Medium"}, {16, "Q5_K - Small"},
      {17, "Q5_K - Medium"}, {18, "Q6_K"},
      {32, "BF16"},
  };
  const auto it = kNames.find(ftype);
  return it == kNames.end() ? "ftype " + std::to_string(ftype) : it->second;
}

// Without general.file_type: the type holding most of the matrix elements.
std::string dominant_type(const GgufFile& f) {
  std::map<GgmlType, uint64_t> elements;
  for (const GgufTensorInfo& t : f.tensors()) {
    if (t.n_dims >= 2) elements[t.type] += static_cast<uint64_t>(t.n_elements());
  }
  GgmlType best = GgmlType::F32;
  uint64_t most = 0;
  for (const auto& [type, n] : elements) {
    if (n > most) best = type, most = n;
  }
  return std::string(type_name(best));
}

ModelSummary summarize_model(const GgufFile& f) {
  const ModelHParams h = read_hparams(f);
  ModelSummary s;
  s.arch = h.arch;
  s.name = h.name.value_or(f.name());
  for (const GgufTensorInfo& t : f.tensors()) s.n_params += static_cast<uint64_t>(t.n_elements());
  s.size_label = size_label(s.n_params);
  s.type_label = h.file_type ? file_type_label(*h.file_type) : dominant_type(f);
  s.file_bytes = f.file_size();
  s.n_layer = static_cast<int64_t>(h.n_layer.value_or(0));
  s.n_embd = static_cast<int64_t>(h.n_embd.value_or(0));
  s.n_ctx_train = static_cast<int64_t>(h.context_length.value_or(0));
  return s;
}

}  // namespace polyinfer
