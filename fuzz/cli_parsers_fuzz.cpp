// libFuzzer target for the small parsers of user input outside GGUF: the
// config file (JSON schema), device and name lists (--device, --priority) and
// integer lists (bench -p/-n/-t/-r). The first byte picks the parser. Bad input
// must end in polyinfer::Error (a one-line message); anything else — another
// exception, a crash, a sanitizer report — is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "int_list.hpp"
#include "polyinfer/error.hpp"
#include "registry/config_file.hpp"
#include "registry/device_ref.hpp"

namespace {

void parse_config(const std::string& text) {
  static const std::string path =
      "/tmp/polyinfer-fuzz-config-" + std::to_string(getpid()) + ".json";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  polyinfer::load_config(path);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0:
        parse_config(text);
        break;
      case 1:
        polyinfer::parse_device_list(text, "--device");
        break;
      case 2:
        polyinfer::parse_name_list(text, "--priority");
        break;
      default:
        polyinfer::cli::parse_int_list(text, "-p");
        break;
    }
  } catch (const polyinfer::Error&) {
  }
  return 0;
}
