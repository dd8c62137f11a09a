// Sampler cost per token: polyinfer-bench-sampler [-n DRAWS] [-v VOCAB]
// Seeded N(0, sigma) logits over a Qwen2-sized vocabulary (152064 by default), a
// 64-token penalty window, and the configurations a llama.cpp user meets: greedy,
// the default chain, and the chain with top-k off. Prints a markdown row per
// configuration with the median microseconds per sample() over DRAWS calls.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "polyinfer/sampler.hpp"

namespace {

struct Config {
  const char* name;
  float sigma;  // spread of the logits: a larger one concentrates the mass
  polyinfer::SamplerParams params;
};

polyinfer::SamplerParams params(float temp, int32_t top_k, float top_p, float min_p) {
  polyinfer::SamplerParams p;
  p.temp = temp;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repeat_penalty = 1.1f;
  p.seed = 1;
  return p;
}

void bench(const Config& c, size_t n_vocab, int draws) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, c.sigma);
  std::vector<float> logits(n_vocab);
  for (float& x : logits) x = normal(rng);
  polyinfer::Sampler s(c.params);
  for (int i = 0; i < 64; ++i) s.accept(static_cast<int32_t>(rng() % n_vocab));
  s.sample(logits);  // warm-up: sizes the reused buffer
  std::vector<double> us;
  for (int i = 0; i < draws; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    s.sample(logits);
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("| %s | %.1f | %zu | %.1f |\n", c.name, static_cast<double>(c.sigma), n_vocab,
              us[us.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int draws = 200;
  size_t n_vocab = 152064;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "-n") {
      draws = std::max(1, std::atoi(argv[i + 1]));
    } else if (a == "-v") {
      n_vocab = static_cast<size_t>(std::max(1, std::atoi(argv[i + 1])));
    } else {
      std::fprintf(stderr, "usage: polyinfer-bench-sampler [-n DRAWS] [-v VOCAB]\n");
      return 2;
    }
  }
  const Config configs[] = {
      {"greedy", 2.0f, params(0.0f, 40, 0.95f, 0.05f)},
      {"default (k40 p0.95 m0.05 t0.8)", 2.0f, params(0.8f, 40, 0.95f, 0.05f)},
      {"k0 p0.95 m0.05 t0.8", 2.0f, params(0.8f, 0, 0.95f, 0.05f)},
      {"k0 p0.95 m0 t0.8", 2.0f, params(0.8f, 0, 0.95f, 0.0f)},
      {"k0 p0.95 m0 t0.8", 1.0f, params(0.8f, 0, 0.95f, 0.0f)},
      {"k0 p1 m0 t1 (plain softmax)", 2.0f, params(1.0f, 0, 1.0f, 0.0f)},
  };
  std::printf("| configuration | logit sigma | vocab | median us/sample |\n|---|---|---|---|\n");
  for (const Config& c : configs) bench(c, n_vocab, draws);
  return 0;
}
