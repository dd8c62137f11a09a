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
#include <vector>

#include "polyinfer/backend/abi.h"
#include "polyinfer/dtype.hpp"
#include "polyinfer/tokenizer.hpp"

namespace polyinfer {

// How layers are spread over the selected devices (llama.cpp's flags).
enum class SplitMode {
  kNone,   // one accelerator (main_gpu) holds every offloaded layer
  kLayer,  // offloaded layers are spread over the accelerators, in tensor_split ratios
};
inline constexpr int kGpuLayersAuto = -1;      // as many as fit in free device memory
inline constexpr int kGpuLayersAll = 1 << 30;  // every layer and the output

struct PlacementParams {
  // Units on the accelerators: the last N of the n_layer layers plus the output
  // (n_layer + 1 offloads all). Ignored when no accelerator is selected.
  int n_gpu_layers = kGpuLayersAuto;
  SplitMode split_mode = SplitMode::kLayer;
  std::vector<double> tensor_split;  // per accelerator; empty: in proportion to free memory
  int main_gpu = 0;                  // index among the accelerators, for kNone
};

// One device to run on: a backend's vtable (from the registry), device index and
// device_open options.
struct DeviceSpec {
  const pi_backend_vtable* backend = nullptr;
  int index = 0;
  std::string options;
};

struct SessionParams {
  int n_threads = 0;                    // CPU threads; 0: physical cores
  int64_t n_ctx = 0;                    // context length in tokens; 0: the model's, capped at 4096
  int64_t n_batch = 512;                // tokens per forward pass while evaluating a prompt
  GgmlType cache_type = GgmlType::F16;  // KV cache: F32, F16 or Q8_0
  // The accelerators to run on, most preferred first (from the registry's
  // selection); empty: the CPU only. The built-in CPU backend is always added
  // last: it holds the layers not offloaded and runs ops the others cannot.
  std::vector<DeviceSpec> devices;
  std::string cpu_options;  // device_open options of the CPU (after threads=)
  PlacementParams placement;
  // One line per op sent back to the CPU or other placement notice, once per session.
  std::function<void(const std::string&)> notice;
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

// Where the time of the forward passes so far went (milliseconds, summed), so
// that host overhead and device time can be told apart (run --verbose).
struct ForwardTimes {
  int64_t passes = 0;
  double build_ms = 0;     // building the op graph
  double schedule_ms = 0;  // placing nodes, inserting copies, planning the arenas
  // submitting to the devices (less a decode step's building of the next
  // step's graph, which overlaps the devices' work)
  double run_ms = 0;
  double read_ms = 0;  // waiting for the devices, the logits read back
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
  uint64_t compute_bytes() const;  // the activation arenas, as planned so far
  int n_gpu_layers() const;        // units (layers + output) on accelerators
  // Lines for --verbose: how -ngl was resolved and the layer -> device map.
  std::vector<std::string> placement_report() const;
  // Lines for --verbose: per device, the weights, KV cache and compute memory.
  std::vector<std::string> memory_report() const;
  const ForwardTimes& forward_times() const;

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
