#include "polyinfer/error.hpp"

namespace polyinfer {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kBadMagic:
      return "bad_magic";
    case ErrorCode::kUnsupportedVersion:
      return "unsupported_version";
    case ErrorCode::kTruncated:
      return "truncated";
    case ErrorCode::kStringTooLong:
      return "string_too_long";
    case ErrorCode::kUnknownValueType:
      return "unknown_value_type";
    case ErrorCode::kUnknownTensorType:
      return "unknown_tensor_type";
    case ErrorCode::kDuplicateKey:
      return "duplicate_key";
    case ErrorCode::kDuplicateTensor:
      return "duplicate_tensor";
    case ErrorCode::kTensorOutOfBounds:
      return "tensor_out_of_bounds";
    case ErrorCode::kDimsOverflow:
      return "dims_overflow";
    case ErrorCode::kBadTensorShape:
      return "bad_tensor_shape";
    case ErrorCode::kBadAlignment:
      return "bad_alignment";
    case ErrorCode::kArrayTooDeep:
      return "array_too_deep";
    case ErrorCode::kTooLarge:
      return "too_large";
    case ErrorCode::kKeyNotFound:
      return "key_not_found";
    case ErrorCode::kTypeMismatch:
      return "type_mismatch";
    case ErrorCode::kBadModel:
      return "bad_model";
    case ErrorCode::kBackend:
      return "backend";
    case ErrorCode::kContextFull:
      return "context_full";
  }
  return "unknown";
}

GgufError::GgufError(ErrorCode code, const std::string& file, uint64_t offset,
                     const std::string& detail)
    : Error(code, file + ": byte " + std::to_string(offset) + ": " + detail),
      file_(file),
      offset_(offset),
      detail_(detail) {}

}  // namespace polyinfer
