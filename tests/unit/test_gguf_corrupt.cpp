// A corpus of corrupt GGUF files made from valid ones: each must raise its specific
// GgufError (one line, naming the file and a byte offset), never crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf_sample.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/gguf.hpp"
#include "polyinfer/gguf_writer.hpp"

namespace polyinfer {
namespace {

using Bytes = std::vector<uint8_t>;

// The error code parsing `bytes` raises; fails the test if it parses.
ErrorCode parse_error(const Bytes& bytes) {
  try {
    GgufFile::parse(bytes, "corrupt.gguf");
  } catch (const GgufError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind("corrupt.gguf: byte ", 0), 0u) << msg;
    EXPECT_LE(e.offset(), bytes.size()) << msg;
    return e.code();
  }
  ADD_FAILURE() << "corrupt file parsed without error";
  return ErrorCode::kIo;
}

// A small file with one key of each kind and two tensors, at known positions.
Bytes small_file(uint32_t alignment = 32) {
  GgufWriter w(alignment);
  w.set("key.aa", GgufValue::u32(7));
  w.set("key.ab", GgufValue::string("value"));
  const std::vector<int32_t> ints = {1, 2, 3};
  w.set("key.ac", GgufValue::array<int32_t>(GgufValueType::INT32, ints));
  w.add_tensor("tensor.a", GgmlType::F32, {8, 2});
  w.add_tensor("tensor.b", GgmlType::Q8_0, {32, 3});
  VectorSink sink;
  w.begin(sink);
  Bytes data(64 + 102, 0x3C);
  w.write_data(data.data(), data.size());
  w.finish();
  return std::move(sink.bytes());
}

size_t find(const Bytes& b, const std::string& s) {
  auto it = std::search(b.begin(), b.end(), s.begin(), s.end());
  if (it == b.end()) throw std::runtime_error("marker not found: " + s);
  return static_cast<size_t>(it - b.begin());
}

template <typename T>
void poke(Bytes& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}

// Positions of fields in small_file(): a key's type follows its name; a tensor's
// n_dims follows its name, then ne[], type, offset.
size_t key_type_at(const Bytes& b, const std::string& key) {
  return find(b, key) + key.size();
}
size_t tensor_ndims_at(const Bytes& b, const std::string& name) {
  return find(b, name) + name.size();
}

TEST(GgufCorrupt, SmallFileIsValid) {
  const Bytes b = small_file();
  const GgufFile f = GgufFile::parse(b, "ok.gguf");
  EXPECT_EQ(f.tensors().size(), 2u);
}

TEST(GgufCorrupt, TruncatedAtEveryByte) {
  const Bytes whole = testing::sample_bytes(11);
  const GgufFile f = GgufFile::parse(whole, "whole");
  const uint64_t data_start = f.data_offset();
  for (size_t n = 0; n < whole.size(); n += (n < data_start + 64 ? 1 : 97)) {
    const Bytes cut(whole.begin(), whole.begin() + static_cast<long>(n));
    const ErrorCode code = parse_error(cut);
    const bool header_error = code == ErrorCode::kTruncated || code == ErrorCode::kStringTooLong ||
                              code == ErrorCode::kTooLarge;
    if (n + 32 <= data_start) {
      // Cut inside the header: truncated field, or a length/count larger than what is left.
      EXPECT_TRUE(header_error) << "cut at " << n << ": " << error_code_name(code);
    } else if (n < data_start) {
      // Cut in the header or in the padding after it.
      EXPECT_TRUE(header_error || code == ErrorCode::kTensorOutOfBounds) << "cut at " << n;
    } else {
      EXPECT_EQ(code, ErrorCode::kTensorOutOfBounds) << "cut at " << n;
    }
  }
}

TEST(GgufCorrupt, BadMagicAndVersions) {
  Bytes b = small_file();
  b[0] = 'X';
  EXPECT_EQ(parse_error(b), ErrorCode::kBadMagic);
  for (uint32_t v : {1u, 0u, 4u, 0x03000000u}) {
    Bytes c = small_file();
    poke<uint32_t>(c, 4, v);
    EXPECT_EQ(parse_error(c), ErrorCode::kUnsupportedVersion) << v;
  }
  EXPECT_EQ(parse_error(Bytes{'G', 'G'}), ErrorCode::kTruncated);
}

TEST(GgufCorrupt, HugeCountsAndLengths) {
  Bytes b = small_file();
  poke<uint64_t>(b, 8, uint64_t{1} << 60);  // n_tensors
  EXPECT_EQ(parse_error(b), ErrorCode::kTooLarge);
  b = small_file();
  poke<uint64_t>(b, 16, ~uint64_t{0});  // n_kv
  EXPECT_EQ(parse_error(b), ErrorCode::kTooLarge);
  b = small_file();
  poke<uint64_t>(b, find(b, "key.aa") - 8, uint64_t{1} << 40);  // key length
  EXPECT_EQ(parse_error(b), ErrorCode::kStringTooLong);
  b = small_file();
  poke<uint64_t>(b, key_type_at(b, "key.ab") + 4, uint64_t{1} << 62);  // string value length
  EXPECT_EQ(parse_error(b), ErrorCode::kStringTooLong);
  b = small_file();
  poke<uint64_t>(b, key_type_at(b, "key.ac") + 8, uint64_t{1} << 61);  // array length
  EXPECT_EQ(parse_error(b), ErrorCode::kTooLarge);
  b = small_file();
  poke<uint64_t>(b, find(b, "tensor.a") - 8, uint64_t{1} << 50);  // tensor name length
  EXPECT_EQ(parse_error(b), ErrorCode::kStringTooLong);
}

TEST(GgufCorrupt, UnknownTypes) {
  Bytes b = small_file();
  poke<uint32_t>(b, key_type_at(b, "key.aa"), 13);
  EXPECT_EQ(parse_error(b), ErrorCode::kUnknownValueType);
  b = small_file();
  poke<uint32_t>(b, key_type_at(b, "key.ac") + 4, 77);  // array element type
  EXPECT_EQ(parse_error(b), ErrorCode::kUnknownValueType);
  b = small_file();
  poke<uint32_t>(b, tensor_ndims_at(b, "tensor.a") + 4 + 16, 99);  // ggml type after ne[2]
  EXPECT_EQ(parse_error(b), ErrorCode::kUnknownTensorType);
  b = small_file();
  poke<uint32_t>(b, tensor_ndims_at(b, "tensor.a") + 4 + 16, 4);  // removed Q4_2 id
  EXPECT_EQ(parse_error(b), ErrorCode::kUnknownTensorType);
}

TEST(GgufCorrupt, DuplicateNames) {
  Bytes b = small_file();
  std::memcpy(b.data() + find(b, "key.ab"), "key.aa", 6);
  EXPECT_EQ(parse_error(b), ErrorCode::kDuplicateKey);
  b = small_file();
  std::memcpy(b.data() + find(b, "tensor.b"), "tensor.a", 8);
  EXPECT_EQ(parse_error(b), ErrorCode::kDuplicateTensor);
}

TEST(GgufCorrupt, OffsetsPastTheEndMisalignedOrOverlapping) {
  const size_t b_off = tensor_ndims_at(small_file(), "tensor.b") + 4 + 16 + 4;
  Bytes b = small_file();
  poke<uint64_t>(b, b_off, uint64_t{1} << 20);
  EXPECT_EQ(parse_error(b), ErrorCode::kTensorOutOfBounds);
  b = small_file();
  poke<uint64_t>(b, b_off, ~uint64_t{0} - 31);  // wraps around when added
  EXPECT_EQ(parse_error(b), ErrorCode::kTensorOutOfBounds);
  b = small_file();
  poke<uint64_t>(b, b_off, 72);  // not a multiple of 32
  EXPECT_EQ(parse_error(b), ErrorCode::kTensorOutOfBounds);
  b = small_file();
  poke<uint64_t>(b, b_off, 32);  // inside tensor.a (64 bytes at 0)
  EXPECT_EQ(parse_error(b), ErrorCode::kTensorOutOfBounds);
}

TEST(GgufCorrupt, BadDims) {
  const size_t nd = tensor_ndims_at(small_file(), "tensor.a");
  Bytes b = small_file();
  poke<uint32_t>(b, nd, 5);
  EXPECT_EQ(parse_error(b), ErrorCode::kBadTensorShape);
  b = small_file();
  poke<uint64_t>(b, nd + 4, uint64_t{1} << 40);  // ne[0] * ne[1] still fits: data past end
  EXPECT_EQ(parse_error(b), ErrorCode::kTensorOutOfBounds);
  b = small_file();
  poke<uint64_t>(b, nd + 4, uint64_t{1} << 62);
  poke<uint64_t>(b, nd + 12, 4);  // element count overflows int64
  EXPECT_EQ(parse_error(b), ErrorCode::kDimsOverflow);
  b = small_file();
  poke<uint64_t>(b, nd + 4, 0);  // a zero dim would hide overflow in the other dims
  poke<uint64_t>(b, nd + 12, uint64_t{1} << 62);
  EXPECT_EQ(parse_error(b), ErrorCode::kBadTensorShape);
  b = small_file();
  poke<uint64_t>(b, nd + 4, ~uint64_t{0});  // negative as int64
  EXPECT_EQ(parse_error(b), ErrorCode::kDimsOverflow);
  b = small_file();
  const size_t nb = tensor_ndims_at(b, "tensor.b");
  poke<uint64_t>(b, nb + 4, 33);  // Q8_0 row not a multiple of 32
  EXPECT_EQ(parse_error(b), ErrorCode::kBadTensorShape);
}

TEST(GgufCorrupt, BadAlignment) {
  Bytes b = small_file(64);
  poke<uint32_t>(b, key_type_at(b, "general.alignment") + 4, 48);
  EXPECT_EQ(parse_error(b), ErrorCode::kBadAlignment);
  b = small_file(64);
  poke<uint32_t>(b, key_type_at(b, "general.alignment") + 4, 0);
  EXPECT_EQ(parse_error(b), ErrorCode::kBadAlignment);
  b = small_file(64);
  poke<uint32_t>(b, key_type_at(b, "general.alignment"), 5);  // INT32 instead of UINT32
  EXPECT_EQ(parse_error(b), ErrorCode::kTypeMismatch);
}

TEST(GgufCorrupt, ArraysNestedTooDeep) {
  GgufValue v = GgufValue::array<int32_t>(GgufValueType::INT32, std::vector<int32_t>{1});
  for (int depth = 1; depth <= kGgufMaxArrayDepth; ++depth) v = GgufValue::nested_array({v});
  GgufWriter w;
  w.set("deep", v);
  VectorSink sink;
  w.begin(sink);
  w.finish();
  EXPECT_EQ(parse_error(sink.bytes()), ErrorCode::kArrayTooDeep);
}

TEST(GgufCorrupt, BoolOutsideZeroOne) {
  GgufWriter w;
  w.set("flag", GgufValue::boolean(true));
  VectorSink sink;
  w.begin(sink);
  w.finish();
  Bytes b = sink.bytes();
  b[key_type_at(b, "flag") + 4] = 2;
  EXPECT_EQ(parse_error(b), ErrorCode::kTypeMismatch);
}

// Inputs the fuzzer once crashed on: each must now be rejected with a GgufError.
TEST(GgufCorrupt, FuzzRegressions) {
  const std::filesystem::path dir =
      std::filesystem::path(POLYINFER_TEST_DATA_DIR) / "gguf-fuzz-regressions";
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const Bytes b{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    SCOPED_TRACE(entry.path().string());
    parse_error(b);
    ++n;
  }
  EXPECT_GE(n, 1) << "no regression inputs in " << dir;
}

}  // namespace
}  // namespace polyinfer
