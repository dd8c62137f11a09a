// Tokenizer::from_gguf: reads the tokenizer.ggml.* metadata the way llama.cpp's
// llama_vocab::impl::load does (src/llama-vocab.cpp), including its defaults.
#include <algorithm>

#include "model/pretokenizer_regexes.hpp"
#include "model/vocab.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/gguf.hpp"

namespace polyinfer {
namespace {

const GgufValue& required_array(const GgufFile& file, const std::string& key) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) throw Error(ErrorCode::kKeyNotFound, file.name() + ": no " + key);
  if (!v->is_array())
    throw Error(ErrorCode::kInvalidArgument, file.name() + ": " + key + " is not an array");
  return *v;
}

// An optional per-token array must have one entry per token.
const GgufValue* per_token_array(const GgufFile& file, const std::string& key, size_t n) {
  const GgufValue* v = file.find(key);
  if (v == nullptr) return nullptr;
  if (!v->is_array() || v->array_size() != n) {
    throw Error(ErrorCode::kInvalidArgument, file.name() + ": " + key + " must be an array of " +
                                                 std::to_string(n) + " entries");
  }
  return v;
}

VocabModel model_of(const GgufFile& file) {
  const auto model = file.get_string("tokenizer.ggml.model");
  if (!model) throw Error(ErrorCode::kKeyNotFound, file.name() + ": no tokenizer.ggml.model");
  if (*model == "llama") return VocabModel::kSpm;
  if (*model == "gpt2") return VocabModel::kBpe;
  throw Error(ErrorCode::kUnsupported,
              file.name() + ": unsupported tokenizer model '" + *model + "'");
}

void load_tokens(const GgufFile& file, Vocab& v) {
  const GgufValue& tokens = required_array(file, "tokenizer.ggml.tokens");
  if (tokens.array_type() != GgufValueType::STRING || tokens.strings().empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                file.name() + ": tokenizer.ggml.tokens must be a non-empty string array");
  }
  v.tokens = tokens.strings();
  const size_t n = v.tokens.size();
  const GgufValue* scores = per_token_array(file, "tokenizer.ggml.scores", n);
  v.scores = scores ? scores->numbers<float>() : std::vector<float>(n, 0.0f);
  const GgufValue* types = per_token_array(file, "tokenizer.ggml.token_type", n);
  v.types.assign(n, TokenType::kNormal);
  if (types) {
    const auto raw = types->numbers<int32_t>();
    for (size_t i = 0; i < n; ++i) v.types[i] = static_cast<TokenType>(raw[i]);
  }
  for (size_t i = 0; i < n; ++i) v.token_to_id[v.tokens[i]] = static_cast<int32_t>(i);
}

void load_merges(const GgufFile& file, Vocab& v) {
  const GgufValue* merges = file.find("tokenizer.ggml.merges");
  if (merges == nullptr) return;
  if (!merges->is_array() || merges->array_type() != GgufValueType::STRING) {
    throw Error(ErrorCode::kInvalidArgument,
                file.name() + ": tokenizer.ggml.merges must be a string array");
  }
  const auto& lines = merges->strings();
  // Keep the first rank of a repeated merge: the lowest rank is the one that applies.
  for (size_t i = 0; i < lines.size(); ++i) v.merge_rank.emplace(lines[i], static_cast<int32_t>(i));
}

// Converters write "no such token" as -1, which an unsigned key holds as 0xFFFFFFFF
// (llama.cpp reads it back as LLAMA_TOKEN_NULL).
int32_t token_id(const GgufFile& file, const Vocab& v, const std::string& key, int32_t fallback) {
  const GgufValue* value = file.find(key);
  if (value == nullptr) return fallback;
  const auto id = value->as_int();
  if (id && (*id == -1 || *id == 0xFFFFFFFF)) return -1;
  if (!id || *id < 0 || static_cast<uint64_t>(*id) >= v.tokens.size()) {
    throw Error(ErrorCode::kInvalidArgument, file.name() + ": " + key +
                                                 " is not a token id of the vocab of " +
                                                 std::to_string(v.tokens.size()));
  }
  return static_cast<int32_t>(*id);
}

void load_special_ids(const GgufFile& file, Vocab& v) {
  // llama.cpp's SPM defaults: <unk> 0, <s> 1, </s> 2 when the file names none.
  const bool spm = v.model == VocabModel::kSpm;
  const auto spm_default = [&](int32_t id) {
    return spm && id < static_cast<int32_t>(v.tokens.size()) ? id : -1;
  };
  v.bos = token_id(file, v, "tokenizer.ggml.bos_token_id", spm_default(1));
  v.eos = token_id(file, v, "tokenizer.ggml.eos_token_id", spm_default(2));
  v.unk = token_id(file, v, "tokenizer.ggml.unknown_token_id", spm_default(0));
  v.eot = token_id(file, v, "tokenizer.ggml.eot_token_id", -1);
  v.pad = token_id(file, v, "tokenizer.ggml.padding_token_id", -1);
  v.add_bos = file.get_bool("tokenizer.ggml.add_bos_token").value_or(spm);
  v.add_eos = file.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  v.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix").value_or(spm);
}

// Tokens that tokenizer_st_partition looks for in the raw text, longest first so
// that a token containing another one wins.
void collect_special_tokens(Vocab& v) {
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const TokenType t = v.types[i];
    const bool special =
        t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUserDefined;
    if (special && !v.tokens[i].empty()) v.special_tokens.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(v.special_tokens.begin(), v.special_tokens.end(),
                   [&](int32_t a, int32_t b) { return v.tokens[a].size() > v.tokens[b].size(); });
}

void load_pre_tokenizer(const GgufFile& file, Vocab& v) {
  const std::string pre = file.get_string("tokenizer.ggml.pre").value_or("default");
  const PreTokenizerKind kind = pre_tokenizer_kind(pre);
  v.pre = PreTokenizer::for_pre(pre);
  v.ignore_merges = kind == PreTokenizerKind::kLlama3;
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GgufFile& file) {
  auto v = std::make_shared<Vocab>();
  v->model = model_of(file);
  load_tokens(file, *v);
  load_special_ids(file, *v);
  collect_special_tokens(*v);
  if (v->model == VocabModel::kBpe) {
    load_merges(file, *v);
    load_pre_tokenizer(file, *v);
  }
  return Tokenizer(std::move(v));
}

}  // namespace polyinfer
