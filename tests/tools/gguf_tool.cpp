// Test helper for the gguf-py cross-check (tests/python/test_gguf_xcheck.py):
//   polyinfer-gguf-tool write-sample SEED OUT   write a GGUF holding every metadata
//                                               value type and random tensors of many types
//   polyinfer-gguf-tool dump FILE               print everything our reader sees as JSON
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf_json.hpp"
#include "gguf_sample.hpp"
#include "polyinfer/gguf.hpp"

namespace {

using Json = nlohmann::ordered_json;
using polyinfer::GgufValue;
using polyinfer::GgufValueType;

Json value_json(const GgufValue& v);

Json array_json(const GgufValue& v) {
  Json items = Json::array();
  for (size_t i = 0; i < v.array_size(); ++i) {
    const GgufValue e = v.element(i);
    if (e.is_array()) {
      items.push_back({{"element_type", std::string(value_type_name(e.array_type()))},
                       {"value", array_json(e)}});
    } else {
      items.push_back(value_json(e));
    }
  }
  return items;
}

Json value_json(const GgufValue& v) {
  return v.is_array() ? array_json(v) : polyinfer::cli::scalar_json(v);
}

std::string hex(std::span<const uint8_t> bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

Json dump(const polyinfer::GgufFile& f) {
  Json md = Json::array();
  for (const auto& kv : f.metadata()) {
    Json e{{"key", kv.key}, {"type", std::string(value_type_name(kv.value.type()))}};
    if (kv.value.is_array()) {
      e["element_type"] = std::string(value_type_name(kv.value.array_type()));
    }
    e["value"] = value_json(kv.value);
    md.push_back(e);
  }
  Json ts = Json::array();
  for (const auto& t : f.tensors()) {
    Json shape = Json::array();
    for (uint32_t d = 0; d < t.n_dims; ++d) shape.push_back(t.ne[d]);
    ts.push_back({{"name", t.name},
                  {"type", static_cast<uint32_t>(t.type)},
                  {"shape", shape},
                  {"offset", f.data_offset() + t.offset},
                  {"n_bytes", t.n_bytes},
                  {"data_hex", hex(f.tensor_data(t))}});
  }
  return Json{{"version", f.version()},
              {"alignment", f.alignment()},
              {"data_offset", f.data_offset()},
              {"metadata", md},
              {"tensors", ts}};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "write-sample" && argc == 4) {
      polyinfer::testing::write_sample_gguf(std::stoull(argv[2]), argv[3]);
      return 0;
    }
    if (cmd == "dump" && argc == 3) {
      std::printf("%s\n", dump(polyinfer::GgufFile::open(argv[2])).dump().c_str());
      return 0;
    }
    std::fprintf(stderr, "usage: polyinfer-gguf-tool write-sample SEED OUT | dump FILE\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "polyinfer-gguf-tool: error: %s\n", e.what());
    return 1;
  }
}
