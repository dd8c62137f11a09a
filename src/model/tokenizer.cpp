// Tokenizer: special-token partitioning, BOS/EOS, dispatch to the SPM or BPE
// algorithm, and decoding (llama.cpp src/llama-vocab.cpp: tokenize_impl,
// tokenizer_st_partition, token_to_piece, detokenize_impl).
#include "polyinfer/tokenizer.hpp"

#include "model/byte_map.hpp"
#include "model/vocab.hpp"
#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

const std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 "▁"

// A stretch of input: either raw text or one special token matched in it.
struct Fragment {
  int32_t id;  // -1 for raw text
  std::string_view text;
};

// Splits every raw fragment at each occurrence of the special token `id`.
std::vector<Fragment> split_on(const std::vector<Fragment>& in, int32_t id,
                               std::string_view token) {
  std::vector<Fragment> out;
  for (const Fragment& f : in) {
    if (f.id >= 0) {
      out.push_back(f);
      continue;
    }
    std::string_view rest = f.text;
    for (size_t at; (at = rest.find(token)) != std::string_view::npos;) {
      if (at > 0) out.push_back({-1, rest.substr(0, at)});
      out.push_back({id, token});
      rest.remove_prefix(at + token.size());
    }
    if (!rest.empty()) out.push_back({-1, rest});
  }
  return out;
}

// tokenizer_st_partition: user-defined tokens are always matched; control and
// unknown-type tokens only when the caller asks for special parsing.
std::vector<Fragment> partition(const Vocab& v, std::string_view text, bool parse_special) {
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, text});
  for (const int32_t id : v.special_tokens) {
    if (!parse_special && v.types[id] != TokenType::kUserDefined) continue;
    fragments = split_on(fragments, id, v.tokens[id]);
  }
  return fragments;
}

// SPM text: the space prefix (only at the start or after a special token, as in
// llama.cpp), then every ' ' written as "▁".
std::string spm_escape(std::string_view text, bool prefix_space) {
  std::string out;
  out.reserve(text.size() + text.size() / 4 + 3);
  if (prefix_space) out += kSpmSpace;
  for (const char c : text) {
    if (c == ' ') {
      out += kSpmSpace;
    } else {
      out += c;
    }
  }
  return out;
}

std::string spm_unescape(std::string_view text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpmSpace.size()) == kSpmSpace) {
      out += ' ';
      pos += kSpmSpace.size();
    } else {
      out += text[pos++];
    }
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// "<0xNN>" -> the byte; anything else is kept as it is.
std::string byte_token_value(const std::string& text) {
  if (text.size() == 6 && text.starts_with("<0x") && text.back() == '>') {
    const int hi = hex_digit(text[3]);
    const int lo = hex_digit(text[4]);
    if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
  }
  return text;
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  const Vocab& v = *vocab_;
  std::vector<int32_t> out;
  if (add_special && v.add_bos && v.bos >= 0) out.push_back(v.bos);
  bool after_special = true;  // the start counts as "after a special token"
  for (const Fragment& f : partition(v, text, parse_special)) {
    if (f.id >= 0) {
      out.push_back(f.id);
      after_special = true;
    } else if (v.model == VocabModel::kSpm) {
      spm_encode(v, spm_escape(f.text, v.add_space_prefix && after_special), out);
      after_special = false;
    } else {
      bpe_encode(v, f.text, out);
    }
  }
  if (add_special && v.add_eos && v.eos >= 0) out.push_back(v.eos);
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "token id " + std::to_string(id) + " is outside the vocab of " + std::to_string(n_vocab()));
  }
  return vocab_->tokens[id];
}

TokenType Tokenizer::token_type(int32_t id) const {
  token_text(id);  // range check
  return vocab_->types[id];
}

std::string Tokenizer::piece(int32_t id) const {
  const std::string& text = token_text(id);
  switch (vocab_->types[id]) {
    case TokenType::kByte:
      return byte_token_value(text);
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUserDefined:
      return text;
    default:
      return vocab_->model == VocabModel::kSpm ? spm_unescape(text) : byte_map::decode(text);
  }
}

void Tokenizer::append_decoded(int32_t id, bool& at_start, std::string& out) const {
  const TokenType type = token_type(id);
  if (type == TokenType::kControl || type == TokenType::kUnknown) return;
  std::string p = piece(id);
  // The space that add_space_prefix added in encode() belongs to no input text.
  if (at_start && vocab_->model == VocabModel::kSpm && vocab_->add_space_prefix &&
      p.starts_with(' ')) {
    p.erase(0, 1);
  }
  at_start = false;
  out += p;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  bool at_start = true;
  for (const int32_t id : ids) append_decoded(id, at_start, out);
  return out;
}

int32_t Tokenizer::n_vocab() const {
  return static_cast<int32_t>(vocab_->tokens.size());
}
int32_t Tokenizer::bos() const {
  return vocab_->bos;
}
int32_t Tokenizer::eos() const {
  return vocab_->eos;
}
int32_t Tokenizer::eot() const {
  return vocab_->eot;
}
int32_t Tokenizer::unk() const {
  return vocab_->unk;
}
int32_t Tokenizer::pad() const {
  return vocab_->pad;
}
bool Tokenizer::add_bos() const {
  return vocab_->add_bos;
}
bool Tokenizer::add_eos() const {
  return vocab_->add_eos;
}

}  // namespace polyinfer
