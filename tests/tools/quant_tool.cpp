// polyinfer-quant-tool: runs the reference quantizers on raw files, for the
// cross-check against gguf-py (tests/python/test_quant_xcheck.py).
//   dequant TYPE IN.bin OUT.bin   raw block bytes -> raw little-endian float32
//   quant   TYPE IN.bin OUT.bin   raw float32     -> raw block bytes
// Output buffers are poisoned before the call so unwritten bytes show up.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "polyinfer/dtype.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/quant.hpp"

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw polyinfer::Error(polyinfer::ErrorCode::kIo, "cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw polyinfer::Error(polyinfer::ErrorCode::kIo, "cannot write " + path);
}

void dequant(polyinfer::GgmlType type, const std::string& in, const std::string& out) {
  const std::vector<uint8_t> src = read_file(in);
  const polyinfer::TypeTraits& t = polyinfer::traits(type);
  if (src.size() % t.type_size != 0) {
    throw polyinfer::Error(polyinfer::ErrorCode::kInvalidArgument,
                           in + ": size is not a multiple of the block bytes");
  }
  const int64_t n = static_cast<int64_t>(src.size() / t.type_size) * t.block_size;
  std::vector<float> dst(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN());
  polyinfer::dequantize_row(type, src.data(), dst.data(), n);
  write_file(out, dst.data(), dst.size() * sizeof(float));
}

void quant(polyinfer::GgmlType type, const std::string& in, const std::string& out) {
  const std::vector<uint8_t> bytes = read_file(in);
  if (bytes.size() % sizeof(float) != 0) {
    throw polyinfer::Error(polyinfer::ErrorCode::kInvalidArgument,
                           in + ": size is not a multiple of 4");
  }
  std::vector<float> src(bytes.size() / sizeof(float));
  std::memcpy(src.data(), bytes.data(), bytes.size());
  const auto n = static_cast<int64_t>(src.size());
  std::vector<uint8_t> dst(polyinfer::row_size(type, n), 0xAB);
  polyinfer::quantize_row(type, src.data(), dst.data(), n);
  write_file(out, dst.data(), dst.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: polyinfer-quant-tool dequant|quant TYPE IN.bin OUT.bin\n";
    return 2;
  }
  const std::string mode = argv[1];
  const auto type = polyinfer::parse_type_name(argv[2]);
  if (!type) {
    std::cerr << "unknown type " << argv[2] << "\n";
    return 2;
  }
  try {
    if (mode == "dequant") {
      dequant(*type, argv[3], argv[4]);
    } else if (mode == "quant") {
      quant(*type, argv[3], argv[4]);
    } else {
      std::cerr << "unknown mode " << mode << "\n";
      return 2;
    }
  } catch (const polyinfer::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
