// polyinfer command-line entry point: subcommands are registered from cmd_*.cpp.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "llama_aliases.hpp"

int main(int argc, char** argv) {
  CLI::App app{"polyinfer: LLM inference on every backend this machine can run", "polyinfer"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "polyinfer 0.1.0");
  int exit_code = 0;
  polyinfer::cli::add_info_command(app, exit_code);
  polyinfer::cli::add_gen_model_command(app, exit_code);
  polyinfer::cli::add_tokenize_command(app, exit_code);
  polyinfer::cli::add_run_command(app, exit_code);
  polyinfer::cli::add_bench_command(app, exit_code);
  polyinfer::cli::add_backends_command(app, exit_code);
  try {
    const std::vector<std::string> args = polyinfer::cli::expand_llama_aliases(argc, argv);
    std::vector<const char*> ptrs;
    for (const std::string& a : args) ptrs.push_back(a.c_str());
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
