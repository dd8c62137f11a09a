// Regex lists per `tokenizer.ggml.pre`, the same strings as llama.cpp
// src/llama-vocab.cpp (llm_tokenizer_bpe constructor) so words split identically.
#include "model/pretokenizer_regexes.hpp"

#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

const char* const kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Six code points of this class (U+1F7D, U+1FBE, U+1FD3, U+1FDB, U+2126, U+212A) are
// canonical singletons that Unicode normalization would turn into other letters and
// break the ranges, so they are written as PCRE2 \x{...} escapes.
const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-"
    "Ჿᴀ-"
    "ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-"
    "ὗὙὛὝὟ-\\x{1F7D}ᾀ-ᾴᾶ-ᾼ\\x{1FBE}ῂ-ῄῆ-ῌῐ-\\x{1FD3}ῖ-\\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\\x{2126}ℨ\\x{"
    "212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-"
    "ꞇꞋ-"
    "ꞎꭰ-ꮿﬀ-ﬆﬓ-"
    "ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";

const char* const kCjk = "[一-龥ࠀ-一가-퟿]+";

}  // namespace

PreTokenizerKind pre_tokenizer_kind(const std::string& pre) {
  static const std::vector<std::pair<PreTokenizerKind, std::vector<std::string>>> kNames = {
      {PreTokenizerKind::kDefault, {"default"}},
      {PreTokenizerKind::kLlama3, {"llama3", "llama-v3", "llama-bpe", "dbrx", "smaug-bpe"}},
      {PreTokenizerKind::kDeepseekLlm, {"deepseek-llm"}},
      {PreTokenizerKind::kDeepseekCoder, {"deepseek-coder"}},
      {PreTokenizerKind::kFalcon, {"falcon"}},
      {PreTokenizerKind::kStarcoder,
       {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}},
      {PreTokenizerKind::kGpt2, {"gpt-2", "mpt", "olmo", "jais", "trillion"}},
      {PreTokenizerKind::kQwen2, {"qwen2", "stablelm2", "hunyuan"}},
  };
  for (const auto& [kind, names] : kNames) {
    for (const auto& name : names) {
      if (name == pre) return kind;
    }
  }
  throw Error(ErrorCode::kUnsupported, "unsupported tokenizer.ggml.pre '" + pre + "'");
}

std::vector<std::string> pre_tokenizer_regexes(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::kLlama3:
      return {kLlama3};
    case PreTokenizerKind::kDeepseekLlm:
      return {"[\r\n]", kDeepseekLlmLetters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$", kCjk,
              "\\p{N}+"};
    case PreTokenizerKind::kDeepseekCoder:
      return {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"};
    case PreTokenizerKind::kFalcon:
      return {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"};
    case PreTokenizerKind::kStarcoder:
      return {"\\p{N}", kGpt2};
    case PreTokenizerKind::kGpt2:
      return {kGpt2};
    case PreTokenizerKind::kQwen2:
      return {kQwen2};
    case PreTokenizerKind::kDefault:
      break;
  }
  return {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
}

}  // namespace polyinfer
