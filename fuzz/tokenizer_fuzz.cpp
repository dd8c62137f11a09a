// libFuzzer target: encode + decode arbitrary bytes with the llama-spm vocab (path in
// POLYINFER_FUZZ_VOCAB, loaded once). The first input byte picks add_special and
// parse_special. Checks: no crash or sanitizer report, every id in range, plain-text
// round trip decode(encode(x)) == x (up to "▁" -> " "), and streaming decode equal to decode.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "polyinfer/gguf.hpp"
#include "polyinfer/tokenizer.hpp"

namespace {

const polyinfer::Tokenizer& tokenizer() {
  static const polyinfer::Tokenizer tok = [] {
    const char* path = std::getenv("POLYINFER_FUZZ_VOCAB");
    if (path == nullptr) {
      std::fprintf(stderr, "set POLYINFER_FUZZ_VOCAB to a GGUF vocab file\n");
      std::abort();
    }
    return polyinfer::Tokenizer::from_gguf(polyinfer::GgufFile::open(path));
  }();
  return tok;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
    std::abort();
  }
}

// SPM writes spaces as U+2581 "▁", so a literal "▁" in the input decodes as ' '
// (llama.cpp does the same); everything else must come back unchanged.
std::string expected_round_trip(std::string text) {
  const std::string lower_block = "\xE2\x96\x81";
  for (size_t at; (at = text.find(lower_block)) != std::string::npos;) text.replace(at, 3, " ");
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const polyinfer::Tokenizer& tok = tokenizer();
  const bool add_special = data[0] & 1;
  const bool parse_special = data[0] & 2;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto ids = tok.encode(text, add_special, parse_special);
  for (const int32_t id : ids) check(id >= 0 && id < tok.n_vocab(), "id out of range");
  const std::string decoded = tok.decode(ids);
  // Parsed special tokens decode to nothing, so only plain text must round-trip.
  if (!parse_special) check(decoded == expected_round_trip(text), "decode(encode(x)) != x");
  polyinfer::StreamingDecoder stream(tok);
  std::string streamed;
  for (const int32_t id : ids) streamed += stream.push(id);
  streamed += stream.flush();
  check(streamed == decoded, "streaming decode differs from decode");
  return 0;
}
