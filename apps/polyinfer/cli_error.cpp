#include "cli_error.hpp"

#include <cstdio>
#include <exception>
#include <new>

#include "polyinfer/error.hpp"

namespace polyinfer::cli {

int run_guarded(const std::function<int()>& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "polyinfer: error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "polyinfer: error: %s\n", e.what());
  }
  return 1;
}

}  // namespace polyinfer::cli
