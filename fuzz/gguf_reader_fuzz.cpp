// libFuzzer target: the GGUF reader and what `polyinfer info` derives from a file.
// Any input must either parse or raise polyinfer::Error; ASan/UBSan catch the rest.
#include <cstddef>
#include <cstdint>
#include <span>

#include "polyinfer/error.hpp"
#include "polyinfer/gguf.hpp"
#include "polyinfer/model_info.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const polyinfer::GgufFile f = polyinfer::GgufFile::parse(std::span(data, size), "fuzz");
    // Touch every tensor byte so an out-of-bounds span would be caught.
    volatile uint8_t sink = 0;
    for (const auto& t : f.tensors()) {
      for (uint8_t b : f.tensor_data(t)) sink = sink ^ b;
    }
    for (const auto& kv : f.metadata()) {
      if (kv.value.is_array() && kv.value.array_size() > 0) {
        (void)kv.value.element(kv.value.array_size() - 1);
      }
    }
    (void)polyinfer::read_hparams(f);
    (void)polyinfer::read_tokenizer_summary(f);
  } catch (const polyinfer::Error&) {
    // Rejected with a typed error: the expected outcome for bad input.
  }
  return 0;
}
