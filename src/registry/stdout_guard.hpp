// Keeps plugin chatter out of stdout: drivers print banners and warnings, and stdout may be
// a report someone parses (`polyinfer backends --json`).
#pragma once

namespace polyinfer {

// While alive, file descriptor 1 points where 2 does (both stdio streams flushed at either
// end); the destructor restores it. Process-wide: construct it only where no other thread
// writes to stdout (the registry probes before anything else runs).
class StdoutToStderr {
 public:
  StdoutToStderr();
  ~StdoutToStderr();
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_ = -1;  // the original stdout, -1 if it could not be saved
};

}  // namespace polyinfer
