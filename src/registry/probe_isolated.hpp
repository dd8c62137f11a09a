// Probing plugins in forked children, so that a driver that crashes or hangs while probed
// takes down only the child.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "registry/plugin_inspect.hpp"

namespace polyinfer {

struct PluginCandidate {
  std::string name;  // backend name, e.g. "cuda"
  std::string path;  // the libpolyinfer-<name>.so found on the search path
};

// Runs inspect_plugin for every candidate, each in its own forked child, all at once, and
// waits at most `timeout` (from the first fork) for all of them. Result i belongs to
// candidate i and never carries a vtable. A child that crashes gives kBroken "probe crashed
// (signal N)"; one still running at the timeout is SIGKILLed and gives kBroken "probe hung
// (killed after T s)"; one that exits without a complete answer gives kBroken too.
//
// The child calls dlopen() after fork(), which POSIX does not promise to be safe in a process
// with several threads; glibc makes it work unless another thread is inside the dynamic
// loader at that instant. Discover backends early, before starting threads of your own.
std::vector<PluginProbe> probe_isolated(const std::vector<PluginCandidate>& candidates,
                                        std::chrono::milliseconds timeout);

// "10 s", "0.5 s": a timeout as the status lines print it.
std::string format_seconds(std::chrono::milliseconds ms);

}  // namespace polyinfer
