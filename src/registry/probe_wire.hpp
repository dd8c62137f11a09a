// The bytes a probing child sends its parent through a pipe: a PluginProbe without its vtable
// (a pointer into the child's address space means nothing to the parent).
#pragma once
#include <optional>
#include <string>

#include "registry/plugin_inspect.hpp"

namespace polyinfer {

std::string encode_probe(const PluginProbe& p);

// nullopt unless `bytes` is exactly one encoded probe (a child that died mid-write sends less).
std::optional<PluginProbe> decode_probe(const std::string& bytes);

}  // namespace polyinfer
