// `polyinfer bench -m FILE`: the tests llama-bench runs, so the two can be set
// side by side on one GGUF: pp<N> (one N-token prompt of random tokens into an
// empty cache) and tg<N> (N single-token decodes from an empty cache), one
// warm-up run, then -r repetitions; mean ± stddev tok/s.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_report.hpp"
#include "cli_error.hpp"
#include "commands.hpp"
#include "device_choice.hpp"
#include "int_list.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/session.hpp"
#include "run_report.hpp"
#include "session_options.hpp"

namespace polyinfer::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> models;
  std::string n_prompt = "512", n_gen = "128", threads, reps = "5", output = "md",
              cache_type = "f16";
  int64_t n_batch = 512;
  bool verbose = false;
  SelectionFlags selection;
  PlacementFlags placement;
};

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, std::mt19937_64& rng) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& id : t) id = static_cast<int32_t>(rng() % static_cast<uint64_t>(n_vocab));
  return t;
}

// One timed run of a test; returns nanoseconds.
double time_test(Session& s, int n_prompt, int n_gen, std::mt19937_64& rng) {
  const int64_t v = s.model().n_vocab;
  s.reset();
  const Timer t;
  if (n_prompt > 0) s.eval(random_tokens(n_prompt, v, rng));
  for (int i = 0; i < n_gen; ++i) s.eval(random_tokens(1, v, rng));
  return t.ms() * 1e6;
}

BenchResult run_test(Session& s, int n_prompt, int n_gen, int reps) {
  std::mt19937_64 rng(1234);
  const ModelSummary& m = s.model();
  BenchResult r{m.arch + " " + m.size_label + " " + m.type_label,
                m.file_bytes,
                m.n_params,
                s.backend_name(),
                s.n_threads(),
                n_prompt,
                n_gen,
                {}};
  time_test(s, n_prompt, n_gen, rng);  // warm-up: page in weights, size the arena
  for (int i = 0; i < reps; ++i) r.samples_ns.push_back(time_test(s, n_prompt, n_gen, rng));
  return r;
}

int max_of(const std::vector<int>& v) {
  int m = 0;
  for (int x : v) m = x > m ? x : m;
  return m;
}

std::string format(const std::string& kind, const std::vector<BenchResult>& results) {
  if (kind == "md") return format_markdown(results);
  if (kind == "csv") return format_csv(results);
  if (kind == "json") return format_json(results);
  throw Error(ErrorCode::kInvalidArgument, "-o must be md, csv or json, not '" + kind + "'");
}

int run_bench(const BenchOptions& o) {
  format(o.output, {});  // reject a bad -o before spending minutes measuring
  const std::vector<int> prompts = parse_int_list(o.n_prompt, "-p");
  const std::vector<int> gens = parse_int_list(o.n_gen, "-n");
  const std::vector<int> threads =
      o.threads.empty() ? std::vector<int>{0} : parse_int_list(o.threads, "-t");
  const std::vector<int> reps = parse_int_list(o.reps, "-r");
  if (reps.size() != 1 || reps[0] < 1)
    throw Error(ErrorCode::kInvalidArgument, "-r takes one count >= 1");
  std::vector<BenchResult> results;
  for (const std::string& model : o.models) {
    for (int t : threads) {
      SessionParams p;
      p.n_threads = t;
      p.n_batch = o.n_batch;
      p.n_ctx = max_of(prompts) + max_of(gens) + 1;
      p.cache_type = parse_cache_type(o.cache_type);
      choose_device(o.selection, o.placement, p, o.verbose ? stderr : nullptr);
      auto s = Session::open(model, p);
      if (o.verbose) print_session_report(*s, stderr);
      for (int n : prompts) {
        if (n > 0) results.push_back(run_test(*s, n, 0, reps[0]));
      }
      for (int n : gens) {
        if (n > 0) results.push_back(run_test(*s, 0, n, reps[0]));
      }
    }
  }
  const std::string out = format(o.output, results);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("bench",
                                 "Measure prompt processing and generation speed (as llama-bench)");
  auto o = std::make_shared<BenchOptions>();
  cmd->add_option("-m,--model", o->models, "GGUF model file(s)")->required();
  cmd->add_option("-p,--n-prompt", o->n_prompt, "Prompt lengths, comma-separated (0: none)")
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", o->n_gen, "Generation lengths, comma-separated (0: none)")
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->threads,
                  "Thread counts, comma-separated (default: physical cores)");
  cmd->add_option("-r,--repetitions", o->reps, "Timed repetitions of each test")
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "Output format: md, csv or json")
      ->capture_default_str();
  cmd->add_option("-b,--batch-size", o->n_batch, "Prompt tokens per forward pass")
      ->capture_default_str();
  cmd->add_option("--cache-type", o->cache_type, "KV cache type: f32, f16 or q8_0")
      ->capture_default_str();
  add_selection_options(*cmd, o->selection);
  add_placement_options(*cmd, o->placement);
  cmd->add_flag("-v,--verbose", o->verbose, "Print the device and memory report");
  cmd->callback([o, &exit_code] { exit_code = run_guarded([&] { return run_bench(*o); }); });
}

}  // namespace polyinfer::cli
