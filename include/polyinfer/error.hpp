// Errors thrown by polyinfer. Every message is one line, fit to print as is.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace polyinfer {

// What went wrong, for callers (and tests) that must tell errors apart.
enum class ErrorCode {
  kIo,                  // open/stat/mmap/read/write failed
  kInvalidArgument,     // a caller passed something unusable
  kUnsupported,         // valid input that this build cannot handle
  kBadMagic,            // GGUF: not "GGUF"
  kUnsupportedVersion,  // GGUF: version other than 2 or 3
  kTruncated,           // GGUF: a field runs past the end of the file
  kStringTooLong,       // GGUF: a string length exceeds the remaining bytes
  kUnknownValueType,    // GGUF: metadata value type id outside 0..12
  kUnknownTensorType,   // GGUF: ggml type id not known
  kDuplicateKey,        // GGUF: the same metadata key twice
  kDuplicateTensor,     // GGUF: the same tensor name twice
  kTensorOutOfBounds,   // GGUF: tensor data past the end of the file or misaligned
  kDimsOverflow,        // GGUF: a dim is negative/zero or the element count overflows
  kBadTensorShape,      // GGUF: too many dims, or ne[0] not a multiple of the block size
  kBadAlignment,        // GGUF: general.alignment not a power of two
  kArrayTooDeep,        // GGUF: nested arrays deeper than kMaxArrayDepth
  kTooLarge,            // a count larger than the file could hold
  kKeyNotFound,         // metadata lookup failed
  kTypeMismatch,        // metadata value has a different type than requested
  kBadModel,            // a valid GGUF that is not a usable model (missing tensor, bad shape)
  kBackend,             // a backend reported a failure (device error, out of memory)
  kContextFull,         // the tokens do not fit the context window
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// A malformed GGUF file: names the file and the byte offset where the problem starts.
// what() reads "<file>: byte <offset>: <detail>".
class GgufError : public Error {
 public:
  GgufError(ErrorCode code, const std::string& file, uint64_t offset, const std::string& detail);
  const std::string& file() const { return file_; }
  uint64_t offset() const { return offset_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string file_;
  uint64_t offset_;
  std::string detail_;
};

}  // namespace polyinfer
