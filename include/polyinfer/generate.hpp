// Text generation on a Session: the prompt goes through in batches, then one
// token at a time is sampled, streamed as text and evaluated, until an
// end-of-generation token, n_predict tokens, a full context or a cancel.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "polyinfer/sampler.hpp"
#include "polyinfer/session.hpp"

namespace polyinfer {

enum class StopReason { kEndOfGeneration, kMaxTokens, kContextFull, kCancelled };

struct GenerateOptions {
  int64_t n_predict = -1;  // tokens to generate; < 0: until EOG or the context is full
  SamplerParams sampling;
  bool ignore_eos = false;  // keep going past end-of-generation tokens (benchmarks, tests)
  const std::atomic<bool>* cancel = nullptr;  // set (e.g. by SIGINT) to stop early
};

struct GenerationStats {
  int64_t n_prompt = 0;     // tokens evaluated as the prompt
  int64_t n_generated = 0;  // tokens sampled
  double prompt_ms = 0;     // wall time of the prompt's forward passes
  double gen_ms = 0;        // wall time from the end of the prompt to the last token
  StopReason stop = StopReason::kMaxTokens;
};

// Runs generation from the session's current state (call Session::reset()
// first for a fresh conversation). on_text gets each decoded piece of text as
// soon as it is complete UTF-8. Throws what Session::eval throws (e.g.
// Error(kContextFull) when the prompt itself does not fit).
GenerationStats generate(Session& session, std::span<const int32_t> prompt,
                         const GenerateOptions& options,
                         const std::function<void(std::string_view)>& on_text);

}  // namespace polyinfer
