// `polyinfer gen-model`: write a synthetic GGUF model (real shapes, random weights,
// working tokenizer), or with --dry-run print its tensor plan as JSON.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_error.hpp"
#include "commands.hpp"
#include "gguf_json.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/gen_model.hpp"

namespace polyinfer::cli {
namespace {

using Json = nlohmann::ordered_json;

struct GenModelArgs {
  GenModelOptions opts;
  std::string arch;  // "" when not given
  int64_t vocab = 0;
  std::string output;
  bool dry_run = false;
};

// Scalars as values; arrays (the tokenizer) by element type and length only.
Json metadata_value(const GgufValue& v) {
  if (!v.is_array()) return scalar_json(v);
  return Json{{"array", std::string(value_type_name(v.array_type()))}, {"length", v.array_size()}};
}

Json plan_json(const ModelPlan& plan) {
  Json md = Json::object();
  for (const GgufKv& kv : plan.metadata) md[kv.key] = metadata_value(kv.value);
  Json tensors = Json::array();
  for (const PlannedTensor& t : plan.tensors) {
    tensors.push_back({{"name", t.name},
                       {"type", std::string(type_name(t.type))},
                       {"shape", t.ne},
                       {"bytes", t.n_bytes}});
  }
  return Json{{"preset", plan.preset.name},
              {"type", std::string(file_type_name(plan.file_type))},
              {"n_tensors", plan.tensors.size()},
              {"n_params", plan.n_params()},
              {"data_bytes", plan.data_bytes()},
              {"metadata", md},
              {"tensors", tensors}};
}

// A progress line that rewrites itself, at most once per percent.
GenProgress terminal_progress() {
  if (isatty(STDERR_FILENO) == 0) return nullptr;
  auto last = std::make_shared<int>(-1);
  return [last](uint64_t done, uint64_t total) {
    const int pct = total == 0 ? 100 : static_cast<int>(done * 100 / total);
    if (pct == *last) return;
    *last = pct;
    std::fprintf(stderr, "\rgen-model: %3d%%%s", pct, pct == 100 ? "\n" : "");
  };
}

int run(GenModelArgs& a) {
  if (!a.arch.empty()) a.opts.arch = a.arch;
  if (a.vocab != 0) a.opts.n_vocab = a.vocab;
  const ModelPlan plan = plan_model(a.opts);
  if (a.dry_run) {
    std::printf("%s\n", plan_json(plan).dump(2).c_str());
    return 0;
  }
  if (a.output.empty()) throw Error(ErrorCode::kInvalidArgument, "-o FILE is required");
  const GenModelStats s = write_model(plan, a.output, terminal_progress());
  std::printf("%s: %llu bytes (%.2f GiB), %zu tensors, %llu params, %.1f s\n", a.output.c_str(),
              static_cast<unsigned long long>(s.file_bytes),
              static_cast<double>(s.file_bytes) / (1024.0 * 1024.0 * 1024.0), plan.tensors.size(),
              static_cast<unsigned long long>(plan.n_params()), s.seconds);
  return 0;
}

}  // namespace

void add_gen_model_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("gen-model", "Write a synthetic GGUF model with real shapes");
  auto a = std::make_shared<GenModelArgs>();
  cmd->add_option("--preset", a->opts.preset, "tiny, llama-1b, llama-8b or qwen2-0.5b")->required();
  cmd->add_option("--arch", a->arch, "llama or qwen2 (tiny); must match a big preset");
  cmd->add_option("--type", a->opts.type, "f32, f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k")
      ->capture_default_str();
  cmd->add_option("--seed", a->opts.seed, "Random seed of the weights")->capture_default_str();
  cmd->add_option("--vocab", a->vocab, "Vocabulary size (default: the preset's)");
  cmd->add_option("-o,--output", a->output, "GGUF file to write");
  cmd->add_flag("--dry-run", a->dry_run, "Print the tensor plan as JSON; write nothing");
  cmd->callback([a, &exit_code] { exit_code = run_guarded([&] { return run(*a); }); });
}

}  // namespace polyinfer::cli
