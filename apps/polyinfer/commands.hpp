// Each subcommand registers itself on the root CLI11 app; the callback it sets
// runs the command and returns the process exit code through `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace polyinfer::cli {

void add_info_command(CLI::App& app, int& exit_code);
void add_gen_model_command(CLI::App& app, int& exit_code);
void add_tokenize_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_backends_command(CLI::App& app, int& exit_code);

}  // namespace polyinfer::cli
