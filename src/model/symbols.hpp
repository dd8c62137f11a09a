// The doubly linked list of symbols that llama.cpp's SPM and BPE tokenizers merge
// in place (llm_symbol): merging folds the right symbol into the left one, so each
// merge is O(1) and no text is copied (internal).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "model/utf8.hpp"

namespace polyinfer {

struct Symbol {
  int prev;
  int next;
  size_t begin;  // byte range [begin, begin + n) in the word; n == 0 once merged away
  size_t n;
};

// One symbol per UTF-8 character of `word` (each invalid byte on its own).
inline std::vector<Symbol> split_symbols(std::string_view word) {
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < word.size();) {
    const size_t len = utf8::char_len(word, pos);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, pos + len == word.size() ? -1 : index + 1, pos, len});
    pos += len;
  }
  return symbols;
}

// Folds symbols[right] into symbols[left] (its right neighbour).
inline void merge_symbols(std::vector<Symbol>& symbols, int left, int right) {
  Symbol& l = symbols[left];
  Symbol& r = symbols[right];
  l.n += r.n;
  r.n = 0;
  l.next = r.next;
  if (r.next >= 0) symbols[r.next].prev = left;
}

}  // namespace polyinfer
