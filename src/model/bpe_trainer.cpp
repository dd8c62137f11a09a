// A minimal deterministic byte-level BPE trainer (GPT-2 style): text is split into
// words, each word into byte symbols, and the most frequent adjacent pair is merged
// repeatedly. Small inputs only (a few KB): every step recounts all pairs.
#include <cctype>
#include <map>
#include <utility>

#include "polyinfer/synthetic_tokenizer.hpp"

namespace polyinfer {
namespace {

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {  // bytes_to_unicode only uses code points below 0x800
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

bool printable_byte(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

bool is_letter(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0;
}
bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}
bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// Pre-tokenisation in the spirit of the GPT-2/Llama-3 regex: " ?letters",
// single digits, " ?punctuation", whitespace runs. Merges never cross these words.
std::map<std::string, int64_t> count_words(const std::string& text) {
  std::map<std::string, int64_t> words;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    if (text[j] == ' ' && j + 1 < text.size() && !is_space(text[j + 1])) ++j;
    if (is_letter(text[j])) {
      while (j < text.size() && is_letter(text[j])) ++j;
    } else if (is_digit(text[j])) {
      ++j;
    } else if (is_space(text[j])) {
      while (j < text.size() && is_space(text[j])) ++j;
    } else {
      while (j < text.size() && !is_space(text[j]) && !is_letter(text[j]) && !is_digit(text[j])) {
        ++j;
      }
    }
    ++words[text.substr(i, j - i)];
    i = j;
  }
  return words;
}

struct Word {
  std::vector<std::string> symbols;
  int64_t count;
};

using Pair = std::pair<std::string, std::string>;

// The most frequent pair; among equals the smallest, so training is deterministic.
std::pair<Pair, int64_t> best_pair(const std::vector<Word>& words) {
  std::map<Pair, int64_t> counts;
  for (const Word& w : words) {
    for (size_t k = 0; k + 1 < w.symbols.size(); ++k) {
      counts[{w.symbols[k], w.symbols[k + 1]}] += w.count;
    }
  }
  std::pair<Pair, int64_t> best{{}, 0};
  for (const auto& [pair, count] : counts) {
    if (count > best.second) best = {pair, count};
  }
  return best;
}

void apply_merge(std::vector<Word>& words, const Pair& p) {
  for (Word& w : words) {
    std::vector<std::string> out;
    for (size_t k = 0; k < w.symbols.size(); ++k) {
      if (k + 1 < w.symbols.size() && w.symbols[k] == p.first && w.symbols[k + 1] == p.second) {
        out.push_back(p.first + p.second);
        ++k;
      } else {
        out.push_back(w.symbols[k]);
      }
    }
    w.symbols = std::move(out);
  }
}

}  // namespace

const std::array<std::string, 256>& byte_symbols() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    uint32_t next = 256;  // non-printable bytes map to 256, 257, ... in byte order
    for (int b = 0; b < 256; ++b) {
      t[b] = utf8(printable_byte(b) ? static_cast<uint32_t>(b) : next++);
    }
    return t;
  }();
  return table;
}

std::vector<std::string> train_bpe(const std::string& text, size_t max_merges) {
  std::vector<Word> words;
  for (const auto& [word, count] : count_words(text)) {
    Word w{{}, count};
    for (unsigned char c : word) w.symbols.push_back(byte_symbols()[c]);
    words.push_back(std::move(w));
  }
  std::vector<std::string> merges;
  while (merges.size() < max_merges) {
    const auto [pair, count] = best_pair(words);
    if (count < 2) break;
    merges.push_back(pair.first + " " + pair.second);
    apply_merge(words, pair);
  }
  return merges;
}

}  // namespace polyinfer
