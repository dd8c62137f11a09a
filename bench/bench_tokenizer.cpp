// Tokenizer encode throughput: polyinfer-bench-tokenizer [-r REPS] VOCAB.gguf...
// Encodes ~1 MB of English text (the synthetic tokenizer's English corpus repeated),
// add_special=false, parse_special=false; 1 warm-up, then REPS timed runs; prints a
// markdown row per vocab with the median and min/max MB/s (MB = 10^6 bytes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "polyinfer/gguf.hpp"
#include "polyinfer/synthetic_tokenizer.hpp"
#include "polyinfer/tokenizer.hpp"

namespace {

std::string english_megabyte() {
  const std::string& corpus = polyinfer::tokenizer_corpus();
  std::string text;
  text.reserve(1'000'000 + corpus.size());
  while (text.size() < 1'000'000) text += corpus;
  text.resize(1'000'000);
  return text;
}

void bench(const std::string& path, const std::string& text, int reps) {
  const polyinfer::GgufFile file = polyinfer::GgufFile::open(path);
  const polyinfer::Tokenizer tok = polyinfer::Tokenizer::from_gguf(file);
  size_t n_tokens = tok.encode(text, false, false).size();  // warm-up
  std::vector<double> mbps;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    n_tokens = tok.encode(text, false, false).size();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    mbps.push_back(static_cast<double>(text.size()) / 1e6 / s);
  }
  std::sort(mbps.begin(), mbps.end());
  const std::string model = file.get_string("tokenizer.ggml.model").value_or("?");
  std::printf("| %s | %s | %zu | %zu | %.2f | %.2f-%.2f |\n", path.c_str(), model.c_str(),
              text.size(), n_tokens, mbps[mbps.size() / 2], mbps.front(), mbps.back());
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 5;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-r" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: polyinfer-bench-tokenizer [-r REPS] VOCAB.gguf...\n");
    return 2;
  }
  try {
    const std::string text = english_megabyte();
    std::printf("| vocab | model | bytes | tokens | MB/s (median of %d) | min-max |\n", reps);
    std::printf("| --- | --- | ---: | ---: | ---: | ---: |\n");
    for (const std::string& p : paths) bench(p, text, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "polyinfer-bench-tokenizer: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
