#include "registry/stdout_guard.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace polyinfer {

StdoutToStderr::StdoutToStderr() {
  std::fflush(stdout);
  saved_ = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
  if (saved_ >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
}

StdoutToStderr::~StdoutToStderr() {
  if (saved_ < 0) return;
  std::fflush(stdout);
  dup2(saved_, STDOUT_FILENO);
  close(saved_);
}

}  // namespace polyinfer
