// Next-token sampling as llama.cpp's default chain does it (common/sampling.cpp):
//   penalties -> top-k -> top-p -> min-p -> temperature -> draw from the softmax.
// The filters run on the penalized logits at temperature 1; the temperature only
// reshapes the distribution of what they kept.
//
// Reproducible: each non-greedy sample() consumes one output x of
// std::mt19937_64(seed) and maps it to u = (x >> 11) * 2^-53 in [0, 1) (not through
// std::uniform_real_distribution, whose results differ between standard libraries);
// the token is the first candidate whose cumulative weight exceeds u times the total.
// The candidate order (id order when nothing is filtered) is fixed by polyinfer's
// own code, ties going to the lower id, never by the standard library.
//
// Cost per call is a few passes over the vocabulary (no full sort): about 0.1 ms
// greedy or with the default top-k 40, about 1 ms with top-k off, on 152k logits
// (BENCHMARKS.md, polyinfer-bench-sampler).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <span>
#include <unordered_map>

namespace polyinfer {

namespace sampling {
struct Workspace;  // sample()'s reused buffers (src/model/sampler_filters.hpp)
}

// A fresh 64-bit seed from std::random_device (the default of SamplerParams::seed).
uint64_t random_seed();

// Defaults are llama.cpp's (common/common.h).
struct SamplerParams {
  float temp = 0.8f;               // <= 0: greedy (argmax after penalties)
  int32_t top_k = 40;              // <= 0: disabled (keep the whole vocabulary)
  float top_p = 0.95f;             // in (0, 1]; 1: disabled
  float min_p = 0.05f;             // in [0, 1]; 0: disabled
  float repeat_penalty = 1.0f;     // > 0; 1: disabled
  float presence_penalty = 0.0f;   // subtracted once from every token in the window
  float frequency_penalty = 0.0f;  // subtracted once per occurrence in the window
  int32_t repeat_last_n = 64;      // penalty window in accepted tokens; 0: none,
                                   // -1: all since construction or reset()
  uint64_t seed = random_seed();   // every value is a valid seed; Sampler::seed() reads it
};

class Sampler {
 public:
  // Throws Error(kInvalidArgument) when a parameter is outside the ranges above or
  // not finite (temp and the penalties must be finite; repeat_last_n >= -1).
  explicit Sampler(SamplerParams params);
  ~Sampler();
  Sampler(Sampler&&) noexcept;
  Sampler& operator=(Sampler&&) noexcept;

  // Picks a token id in [0, logits.size()) from one row of logits (one per vocab
  // entry; finite or -inf). Does not record it: call accept() with the token that
  // is actually fed back. Throws Error(kInvalidArgument) when logits is empty,
  // holds a NaN or +inf (given, or made by the penalties), is too short for a token
  // in the penalty window, or (when not greedy) is all -inf.
  int32_t sample(std::span<const float> logits);

  // Applies the repetition penalties of the current window to `logits` in place:
  // for each token t seen c > 0 times in the last repeat_last_n accepted tokens,
  //   logit[t] = logit[t] <= 0 ? logit[t] * repeat_penalty : logit[t] / repeat_penalty
  //   logit[t] -= c * frequency_penalty + presence_penalty
  // (all in float, as llama.cpp). Throws Error(kInvalidArgument) if t >= logits.size().
  void apply_penalties(std::span<float> logits) const;

  // Records a token (a prompt token or a sampled one) in the penalty window.
  // Throws Error(kInvalidArgument) for a negative id.
  void accept(int32_t token);

  // Forgets the history and restarts the random sequence from the seed.
  void reset();

  uint64_t seed() const { return params_.seed; }
  const SamplerParams& params() const { return params_; }

 private:
  // Copies the logits into the workspace with the penalties applied.
  void load(std::span<const float> logits);
  double uniform01();

  SamplerParams params_;
  std::mt19937_64 rng_;
  std::deque<int32_t> window_;                   // last repeat_last_n accepted tokens
  std::unordered_map<int32_t, int32_t> counts_;  // occurrences of each token in window_
  std::unique_ptr<sampling::Workspace> work_;    // reused: no allocation per call
};

}  // namespace polyinfer
