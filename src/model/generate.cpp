#include "polyinfer/generate.hpp"

#include <chrono>

#include "polyinfer/tokenizer.hpp"

namespace polyinfer {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool is_end_of_generation(const Tokenizer& tok, int32_t id) {
  return id == tok.eos() || id == tok.eot();
}

bool cancelled(const GenerateOptions& o) {
  return o.cancel != nullptr && o.cancel->load(std::memory_order_relaxed);
}

}  // namespace

GenerationStats generate(Session& session, std::span<const int32_t> prompt,
                         const GenerateOptions& options,
                         const std::function<void(std::string_view)>& on_text) {
  GenerationStats st;
  const Tokenizer& tok = session.tokenizer();
  Sampler sampler(options.sampling);
  for (int32_t id : prompt) sampler.accept(id);
  const Clock::time_point t0 = Clock::now();
  std::span<const float> logits = session.eval(prompt);
  st.prompt_ms = ms_since(t0);
  st.n_prompt = static_cast<int64_t>(prompt.size());

  // The prompt's text precedes the output: fed through the decoder (and its
  // text dropped), it decides whether the first piece keeps its leading space.
  StreamingDecoder decoder(tok);
  for (int32_t id : prompt) decoder.push(id);
  decoder.flush();
  const Clock::time_point t1 = Clock::now();
  for (;;) {
    if (cancelled(options)) {
      st.stop = StopReason::kCancelled;
      break;
    }
    if (options.n_predict >= 0 && st.n_generated >= options.n_predict) {
      st.stop = StopReason::kMaxTokens;
      break;
    }
    const int32_t id = sampler.sample(logits);
    ++st.n_generated;
    if (!options.ignore_eos && is_end_of_generation(tok, id)) {
      st.stop = StopReason::kEndOfGeneration;
      break;
    }
    sampler.accept(id);
    on_text(decoder.push(id));
    const bool last = options.n_predict >= 0 && st.n_generated >= options.n_predict;
    if (last) continue;  // the loop ends at the top; no need to evaluate it
    if (session.n_past() >= session.n_ctx()) {
      st.stop = StopReason::kContextFull;
      break;
    }
    const int32_t one[] = {id};
    logits = session.eval(one);
  }
  on_text(decoder.flush());
  st.gen_ms = ms_since(t1);
  return st;
}

}  // namespace polyinfer
