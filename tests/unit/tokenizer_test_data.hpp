// Loading the shared tokenizer test data (../shared/models). A missing file fails
// the test: these vectors are the point of the tests, never optional.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "polyinfer/gguf.hpp"
#include "polyinfer/tokenizer.hpp"

namespace polyinfer::test {

inline std::string models_dir() {
  return POLYINFER_MODELS_DIR;
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing test data file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// llama.cpp tests/test-tokenizer-0: strings separated by "\n__ggml_vocab_test__\n";
// the file ends with a separator, so each string is the text before one.
inline std::vector<std::string> read_inp(const std::string& path) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string all = read_all(path);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t at; (at = all.find(sep, start)) != std::string::npos; start = at + sep.size()) {
    out.push_back(all.substr(start, at - start));
  }
  if (start != all.size()) throw std::runtime_error(path + ": text after the last separator");
  return out;
}

inline std::vector<std::vector<int32_t>> read_out(const std::string& path) {
  std::istringstream in(read_all(path));
  std::vector<std::vector<int32_t>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    for (int32_t id; ls >> id;) ids.push_back(id);
    out.push_back(ids);
  }
  return out;
}

inline Tokenizer load_tokenizer(const std::string& file) {
  return Tokenizer::from_gguf(GgufFile::open(models_dir() + "/" + file));
}

}  // namespace polyinfer::test
