// StreamingDecoder: holds back the bytes of a character that is not complete yet,
// since a byte-fallback or byte-level token can carry part of one.
#include "model/utf8.hpp"
#include "polyinfer/tokenizer.hpp"

namespace polyinfer {

std::string StreamingDecoder::push(int32_t id) {
  tokenizer_.append_decoded(id, at_start_, pending_);
  const size_t ready = pending_.size() - utf8::incomplete_tail(pending_);
  std::string out = pending_.substr(0, ready);
  pending_.erase(0, ready);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace polyinfer
