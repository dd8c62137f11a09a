// One-line error reporting for the CLI: "polyinfer: error: <message>" on stderr.
#pragma once

#include <functional>

namespace polyinfer::cli {

// Runs fn, turning any exception into a one-line message and exit code 1.
int run_guarded(const std::function<int()>& fn);

}  // namespace polyinfer::cli
