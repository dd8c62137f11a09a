// A model loaded on a device with its KV cache: the unit that evaluates tokens.
//
//   auto s = Session::open("model.gguf", {.n_threads = 4});
//   std::vector<int32_t> ids = s->tokenizer().encode("Hello", true, false);
//   std::span<const float> logits = s->eval(ids);   // [n_vocab] of the last token
//
// Architectures: llama (Llama 1/2/3, Mistral, TinyLlama, SmolLM) and qwen2.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "polyinfer/backend/abi.h"
#include "polyinfer/dtype.hpp"
#include "polyinfer/tokenizer.hpp"

namespace polyinfer {

struct SessionParams {
  int n_threads = 0;                    // CPU threads; 0: physical cores
  int64_t n_ctx = 0;                    // context length in tokens; 0: the model's, capped at 4096
  int64_t n_batch = 512;                // tokens per forward pass while evaluating a prompt
  GgmlType cache_type = GgmlType::F16;  // KV cache: F32, F16 or Q8_0
  // The device to run on: a backend's vtable (from the registry) and device
  // index; nullptr: the built-in CPU backend. options go to device_open.
  const pi_backend_vtable* backend = nullptr;
  int device_index = 0;
  std::string device_options;
  // While weights are paged in: bytes done, bytes in all.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct ModelSummary {
  std::string arch;        // general.architecture
  std::string name;        // general.name, or the file name
  std::string size_label;  // "1B", "260K" (from the parameter count)
  std::string type_label;  // llama.cpp's file type name, e.g. "Q4_K - Medium"
  uint64_t n_params = 0;
  uint64_t file_bytes = 0;
  int64_t n_vocab = 0, n_layer = 0, n_embd = 0, n_ctx_train = 0;
};

class Session {
 public:
  // Throws Error: kIo / GGUF errors for an unreadable file, kBadModel for a GGUF
  // that is not a usable model, kUnsupported for another architecture or a
  // weight type without kernels, kInvalidArgument for bad params, kBackend.
  static std::unique_ptr<Session> open(const std::string& path, const SessionParams& params);
  ~Session();

  const Tokenizer& tokenizer() const;
  const ModelSummary& model() const;
  int64_t n_ctx() const;
  int64_t n_batch() const;
  int64_t n_past() const;  // tokens in the KV cache
  int n_threads() const;
  std::string backend_name() const;  // "CPU", "CUDA", ... (upper case, as llama-bench)
  std::string device_desc() const;   // e.g. "cpu:0 AMD EPYC (AVX3_DL), 2 threads"
  uint64_t kv_cache_bytes() const;
  uint64_t compute_bytes() const;  // the activation arena, as planned so far

  // Evaluates tokens at positions n_past() .. n_past() + size - 1, in batches of
  // n_batch, and appends them to the KV cache. Returns the logits (F32) of the
  // last token [n_vocab], or with all_logits of every token [size][n_vocab];
  // valid until the next call. Throws Error(kContextFull) when they do not fit
  // in n_ctx, Error(kInvalidArgument) for an empty span or an id outside the vocab.
  std::span<const float> eval(std::span<const int32_t> tokens, bool all_logits = false);
  // Forgets the KV cache (n_past() becomes 0).
  void reset();

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace polyinfer
