// Byte-level BPE as llama.cpp's llm_tokenizer_bpe_session does it
// (src/llama-vocab.cpp): pre-tokenize into words, map each word's bytes through the
// GPT-2 byte table, then repeatedly merge the adjacent pair with the lowest merge rank.
#include <queue>
#include <string>

#include "model/byte_map.hpp"
#include "model/symbols.hpp"
#include "model/vocab.hpp"

namespace polyinfer {
namespace {

struct Bigram {
  int left;
  int right;
  int32_t rank;
  size_t left_n;  // sizes when queued; a mismatch later means the entry is stale
  size_t right_n;
};

// Lowest rank first; equal ranks go leftmost first.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

using BigramQueue = std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder>;

std::string encode_bytes(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (const char c : raw) out += byte_map::encode(static_cast<uint8_t>(c));
  return out;
}

class BpeWord {
 public:
  BpeWord(const Vocab& vocab, std::string word)
      : vocab_(vocab), word_(std::move(word)), symbols_(split_symbols(word_)) {}

  void run(std::vector<int32_t>& out) {
    for (size_t i = 1; i < symbols_.size(); ++i)
      try_add(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      if (symbols_[b.left].n != b.left_n || symbols_[b.right].n != b.right_n) continue;
      merge_symbols(symbols_, b.left, b.right);
      try_add(symbols_[b.left].prev, b.left);
      try_add(b.left, symbols_[b.left].next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
  }

 private:
  std::string_view text_of(const Symbol& s) const {
    return std::string_view(word_).substr(s.begin, s.n);
  }

  void try_add(int left, int right) {
    if (left < 0 || right < 0) return;
    key_.assign(text_of(symbols_[left]));
    key_ += ' ';
    key_ += text_of(symbols_[right]);
    const auto it = vocab_.merge_rank.find(key_);
    if (it == vocab_.merge_rank.end()) return;
    queue_.push({left, right, it->second, symbols_[left].n, symbols_[right].n});
  }

  // A final symbol that is not a token is emitted byte by byte (each byte's mapped
  // character is a token in a byte-level vocab; unk otherwise).
  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view text = text_of(s);
    if (const int32_t id = vocab_.find(text); id >= 0) {
      out.push_back(id);
      return;
    }
    for (size_t pos = 0; pos < text.size();) {
      const size_t len = utf8::char_len(text, pos);
      int32_t id = vocab_.find(text.substr(pos, len));
      if (id < 0) id = vocab_.unk;
      if (id >= 0) out.push_back(id);
      pos += len;
    }
  }

  const Vocab& vocab_;
  std::string word_;
  std::vector<Symbol> symbols_;
  BigramQueue queue_;
  std::string key_;
};

}  // namespace

void bpe_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
  for (const std::string_view raw : vocab.pre.split(text)) {
    std::string word = encode_bytes(raw);
    if (vocab.ignore_merges) {
      if (const int32_t id = vocab.find(word); id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    BpeWord(vocab, std::move(word)).run(out);
  }
}

}  // namespace polyinfer
