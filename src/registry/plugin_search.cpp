#include "registry/plugin_search.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string_view>

namespace polyinfer {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "libpolyinfer-";
constexpr std::string_view kSuffix = ".so";

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

// The backend name in a plugin file name, or "" when it is not one.
std::string backend_of(std::string_view file) {
  if (file.size() <= kPrefix.size() + kSuffix.size() || !file.starts_with(kPrefix) ||
      !file.ends_with(kSuffix)) {
    return "";
  }
  const std::string_view name =
      file.substr(kPrefix.size(), file.size() - kPrefix.size() - kSuffix.size());
  return valid_name(name) ? std::string(name) : "";
}

// Plugin files in one directory, sorted by name so that results do not depend on readdir order.
std::vector<std::string> plugin_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!backend_of(file).empty() && it->is_regular_file(ec)) files.push_back(file);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Lexically normal and without a trailing '/', so that "a/" and "a" count as one directory.
std::string normal(const fs::path& dir) {
  std::string s = dir.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string absolute(const std::string& dir) {
  std::error_code ec;
  const fs::path p = fs::absolute(dir, ec);
  return normal(ec ? fs::path(dir) : p);
}

}  // namespace

std::vector<std::string> plugin_search_path(const std::string& backend_path,
                                            const std::string& executable) {
  std::vector<std::string> dirs;
  size_t start = 0;
  while (start <= backend_path.size()) {
    const size_t colon = std::min(backend_path.find(':', start), backend_path.size());
    // Absolute, so that the report says where it looked whatever the working directory.
    if (colon > start) dirs.push_back(absolute(backend_path.substr(start, colon - start)));
    start = colon + 1;
  }
  if (!executable.empty()) {
    const fs::path exe_dir = fs::path(executable).parent_path();
    dirs.push_back(normal(exe_dir));
    dirs.push_back(normal(exe_dir / ".." / "lib" / "polyinfer"));
  }
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string& d : dirs) {
    if (seen.insert(d).second) unique.push_back(d);
  }
  return unique;
}

std::string current_executable() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.string();
}

std::vector<PluginCandidate> find_plugins(const std::vector<std::string>& dirs) {
  std::vector<PluginCandidate> found;
  std::set<std::string> names;
  for (const std::string& dir : dirs) {
    for (const std::string& file : plugin_files(dir)) {
      std::string name = backend_of(file);
      if (names.insert(name).second) {
        found.push_back({std::move(name), (fs::path(dir) / file).string()});
      }
    }
  }
  return found;
}

}  // namespace polyinfer
