// SentencePiece-style tokenization as llama.cpp's llm_tokenizer_spm_session does it
// (src/llama-vocab.cpp): start from single characters and keep merging the adjacent
// pair whose concatenation is a token with the highest score.
#include <cstdio>
#include <queue>

#include "model/symbols.hpp"
#include "model/vocab.hpp"

namespace polyinfer {
namespace {

struct Bigram {
  int left;
  int right;
  float score;
  size_t size;  // bytes of the merged text; a mismatch later means the entry is stale
};

// Highest score first; equal scores go leftmost first. Vocabs whose scores are all
// equal (TinyStories-656K: every score -1000) depend on that tie-break.
struct BigramOrder {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

using BigramQueue = std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder>;

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, std::string_view text)
      : vocab_(vocab), text_(text), symbols_(split_symbols(text)) {}

  void run(std::vector<int32_t>& out) {
    for (size_t i = 1; i < symbols_.size(); ++i)
      try_add(static_cast<int>(i) - 1, static_cast<int>(i));
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      const Symbol& l = symbols_[b.left];
      const Symbol& r = symbols_[b.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;
      merge_symbols(symbols_, b.left, b.right);
      try_add(symbols_[b.left].prev, b.left);
      try_add(b.left, symbols_[b.left].next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
  }

 private:
  std::string_view text_of(const Symbol& s) const { return text_.substr(s.begin, s.n); }

  void try_add(int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols_[left].n + symbols_[right].n;
    const int32_t id = vocab_.find(text_.substr(symbols_[left].begin, size));
    if (id < 0) return;
    queue_.push({left, right, vocab_.scores[id], size});
  }

  // Every merged symbol is a token; a single character that is not falls back to
  // its bytes as <0xNN> tokens, then to the byte itself as a token, then to unk.
  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view text = text_of(s);
    if (const int32_t id = vocab_.find(text); id >= 0) {
      out.push_back(id);
      return;
    }
    for (const char c : text) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned>(static_cast<uint8_t>(c)));
      int32_t id = vocab_.find(name);
      if (id < 0) id = vocab_.find(std::string_view(&c, 1));
      if (id < 0) id = vocab_.unk;
      if (id >= 0) out.push_back(id);
    }
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  BigramQueue queue_;
};

}  // namespace

void spm_encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
  SpmSession(vocab, text).run(out);
}

}  // namespace polyinfer
