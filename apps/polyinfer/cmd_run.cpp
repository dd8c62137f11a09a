// `polyinfer run -m FILE -p TEXT`: generates text from a prompt, streaming it
// to stdout as tokens arrive; load/prompt/generation statistics go to stderr.
// Ctrl-C stops generation and still prints them (a second Ctrl-C kills).
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "cli_error.hpp"
#include "commands.hpp"
#include "device_choice.hpp"
#include "polyinfer/dtype.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/generate.hpp"
#include "polyinfer/session.hpp"
#include "run_report.hpp"
#include "session_options.hpp"

namespace polyinfer::cli {
namespace {

struct RunOptions {
  std::string model, prompt, prompt_file, cache_type = "f16";
  int64_t n_predict = -1, n_ctx = 0, n_batch = 512;
  int n_threads = 0;
  SamplerParams sampling;
  std::optional<uint64_t> seed;
  bool no_display_prompt = false, verbose = false, ignore_eos = false;
  bool prompt_given = false;  // -p or -f on the command line (even empty)
  SelectionFlags selection;
  PlacementFlags placement;
};

std::atomic<bool> g_interrupted{false};

void on_sigint(int) {
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process
}

std::string read_prompt(const RunOptions& o) {
  if (!o.prompt.empty() && !o.prompt_file.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "give the prompt with -p or -f, not both");
  }
  std::string text = o.prompt;
  if (!o.prompt_file.empty()) {
    std::ifstream in(o.prompt_file, std::ios::binary);
    if (!in) throw Error(ErrorCode::kIo, "cannot open prompt file " + o.prompt_file);
    std::ostringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  if (text.empty() && o.prompt_given)
    throw Error(ErrorCode::kInvalidArgument, "empty prompt (give text with -p or -f)");
  return text;  // "" without -p/-f: generation starts from BOS alone, as llama.cpp's
}

std::unique_ptr<Session> open_session(const RunOptions& o) {
  SessionParams p;
  p.n_threads = o.n_threads;
  p.n_ctx = o.n_ctx;
  p.n_batch = o.n_batch;
  p.cache_type = parse_cache_type(o.cache_type);
  if (isatty(STDERR_FILENO)) p.progress = load_progress_printer();
  choose_device(o.selection, o.placement, p, o.verbose ? stderr : nullptr);
  return Session::open(o.model, p);
}

int run_generate(const RunOptions& o) {
  const std::string text = read_prompt(o);
  SamplerParams sp = o.sampling;
  if (o.seed) sp.seed = *o.seed;
  const Timer load_timer;
  auto session = open_session(o);
  const double load_ms = load_timer.ms();
  if (o.verbose) print_session_report(*session, stderr);
  const std::vector<int32_t> prompt = session->tokenizer().encode(text, true, true);
  if (prompt.empty()) throw Error(ErrorCode::kInvalidArgument, "the prompt has no tokens");
  if (static_cast<int64_t>(prompt.size()) >= session->n_ctx()) {
    throw Error(ErrorCode::kContextFull, "prompt is " + std::to_string(prompt.size()) +
                                             " tokens, which does not fit the context of " +
                                             std::to_string(session->n_ctx()) +
                                             " (raise it with -c)");
  }
  if (!o.no_display_prompt) std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  GenerateOptions go;
  go.n_predict = o.n_predict;
  go.sampling = sp;
  go.cancel = &g_interrupted;
  go.ignore_eos = o.ignore_eos;
  g_interrupted.store(false);
  std::signal(SIGINT, on_sigint);
  const GenerationStats st = generate(*session, prompt, go, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  });
  std::signal(SIGINT, SIG_DFL);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  print_run_stats(load_ms, st, stderr);
  if (o.verbose) print_memory_report(*session, stderr);
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("run", "Generate text from a prompt");
  auto o = std::make_shared<RunOptions>();
  SamplerParams& s = o->sampling;
  cmd->add_option("-m,--model", o->model, "GGUF model file")->required();
  auto* prompt = cmd->add_option("-p,--prompt", o->prompt, "Prompt text (none: start from BOS)");
  auto* file = cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate (-1: until end of text)");
  cmd->add_option("-c,--ctx-size", o->n_ctx,
                  "Context size in tokens (0: the model's, at most 4096)");
  cmd->add_option("-b,--batch-size", o->n_batch, "Prompt tokens per forward pass")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("-t,--threads", o->n_threads, "CPU threads (0: physical cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--cache-type", o->cache_type, "KV cache type: f32, f16 or q8_0");
  cmd->add_option("--temp", s.temp, "Temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "Keep the k most likely tokens (0: all)")
      ->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "Nucleus sampling threshold (1: off)")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "Drop tokens below min-p x the top probability (0: off)")
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", s.repeat_penalty, "Penalty for repeated tokens (1: off)")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", s.repeat_last_n, "Tokens the penalties look back over")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", s.presence_penalty, "Presence penalty (0: off)");
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty (0: off)");
  cmd->add_option("--seed", o->seed, "Sampling seed (same seed, same text)");
  cmd->add_flag("--no-display-prompt", o->no_display_prompt, "Do not echo the prompt");
  add_selection_options(*cmd, o->selection);
  add_placement_options(*cmd, o->placement);
  cmd->add_flag("--ignore-eos", o->ignore_eos, "Do not stop at end-of-generation tokens");
  cmd->add_flag("-v,--verbose", o->verbose, "Print the device, layer placement and memory");
  cmd->callback([o, prompt, file, &exit_code] {
    o->prompt_given = prompt->count() + file->count() > 0;
    exit_code = run_guarded([&] { return run_generate(*o); });
  });
}

}  // namespace polyinfer::cli
