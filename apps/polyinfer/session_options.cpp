#include "session_options.hpp"

#include "polyinfer/error.hpp"

namespace polyinfer::cli {

GgmlType parse_cache_type(const std::string& name) {
  const auto t = parse_type_name(name);
  if (!t || (*t != GgmlType::F32 && *t != GgmlType::F16 && *t != GgmlType::Q8_0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--cache-type must be f32, f16 or q8_0, not '" + name + "'");
  }
  return *t;
}

}  // namespace polyinfer::cli
