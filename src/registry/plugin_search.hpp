// Where backend plugins are looked for, and what is found there.
#pragma once
#include <string>
#include <vector>

#include "registry/probe_isolated.hpp"

namespace polyinfer {

// The directories searched, in order: each entry of `backend_path` (POLYINFER_BACKEND_PATH,
// colon-separated, empty entries skipped), the directory of `executable`, then
// <that directory>/../lib/polyinfer (an installed tree's plugin dir). A repeated directory is
// kept only where it first appears. An empty `executable` adds no directory of its own.
std::vector<std::string> plugin_search_path(const std::string& backend_path,
                                            const std::string& executable);

// The running executable (/proc/self/exe, symlinks resolved); "" when it cannot be read.
std::string current_executable();

// Every libpolyinfer-<name>.so in `dirs` (name: lower-case letters, digits, '-', '_'). A name
// found in several directories keeps the first, in `dirs` order; missing directories are
// skipped. Ordered by first appearance (directory order, then file name).
std::vector<PluginCandidate> find_plugins(const std::vector<std::string>& dirs);

}  // namespace polyinfer
