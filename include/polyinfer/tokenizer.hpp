// Text <-> token ids for GGUF vocabularies, following llama.cpp (src/llama-vocab.cpp).
//
// Supported `tokenizer.ggml.model` values:
//   "llama": SentencePiece-style (llm_tokenizer_spm): highest-score bigram merges over
//            UTF-8 characters, then <0xNN> byte fallback, else the unknown token.
//   "gpt2":  byte-level BPE (llm_tokenizer_bpe): pre-tokenizer regexes chosen by
//            `tokenizer.ggml.pre`, GPT-2 byte->unicode map, merges by rank.
// Any other model, or an unknown `pre`, makes from_gguf throw Error(kUnsupported)
// naming it. Missing or inconsistent tokenizer arrays throw Error(kKeyNotFound) /
// Error(kInvalidArgument).
//
// Input text is arbitrary bytes: invalid UTF-8 is never rejected; each invalid byte
// becomes its own symbol and ends up as a byte token (SPM <0xNN>, BPE byte map).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace polyinfer {

class GgufFile;
struct Vocab;

// Token types as stored in tokenizer.ggml.token_type (llama.cpp llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.* metadata: tokens, scores, token_type, merges, the
  // bos/eos/eot/unknown/padding ids, add_bos_token, add_eos_token, add_space_prefix.
  static Tokenizer from_gguf(const GgufFile& file);

  // add_special: prepend BOS / append EOS as the vocab's add_bos/add_eos say.
  // parse_special: control and unknown-type tokens written literally in `text`
  // (e.g. "<s>") become their ids; user-defined tokens always do (llama.cpp
  // tokenizer_st_partition). Otherwise such text is tokenized as plain text.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // Concatenated pieces. Control and unknown-type tokens produce nothing; SPM drops
  // the space that add_space_prefix put before the first text token (at the start
  // or right after BOS), so decode(encode(x, ...)) == x. Throws Error(kInvalidArgument)
  // for an id outside [0, n_vocab()).
  std::string decode(std::span<const int32_t> ids) const;

  // One token's text as bytes: "▁" -> ' ', <0xNN> -> that byte, the BPE byte map
  // reversed; control/unknown tokens give their literal text (for display).
  // Throws Error(kInvalidArgument) for an id out of range.
  std::string piece(int32_t id) const;

  // The raw vocabulary string and type of a token (id must be in range).
  const std::string& token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;

  int32_t n_vocab() const;
  int32_t bos() const;  // -1 when the vocab has none
  int32_t eos() const;
  int32_t eot() const;
  int32_t unk() const;
  int32_t pad() const;
  bool add_bos() const;
  bool add_eos() const;

 private:
  friend class StreamingDecoder;
  explicit Tokenizer(std::shared_ptr<const Vocab> vocab) : vocab_(std::move(vocab)) {}
  // Appends what token `id` contributes to decoded text; `at_start` is true until the
  // first text token has been seen (SPM strips its leading space).
  void append_decoded(int32_t id, bool& at_start, std::string& out) const;
  std::shared_ptr<const Vocab> vocab_;
};

// Incremental decoding for generation: push ids one at a time and get back text
// that never ends inside a UTF-8 character; the bytes of an incomplete character
// are held until the rest arrives. Bytes that can never complete a character
// (invalid UTF-8) are passed through as they are. The concatenation of every push()
// and the final flush() equals Tokenizer::decode of all the ids.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::string push(int32_t id);
  // Returns whatever is still held (an incomplete character at the end of the stream).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
  bool at_start_ = true;
};

}  // namespace polyinfer
