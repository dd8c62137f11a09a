#include "gguf_json.hpp"

namespace polyinfer::cli {

nlohmann::ordered_json scalar_json(const GgufValue& v) {
  if (const std::string* s = v.as_string()) return *s;
  if (auto b = v.as_bool()) return *b;
  if (auto f = v.as_float()) return *f;
  if (auto i = v.as_int()) return *i;
  if (auto u = v.as_uint()) return *u;
  return nullptr;
}

}  // namespace polyinfer::cli
