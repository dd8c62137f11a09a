// Argument errors of quantize_row/dequantize_row.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "polyinfer/error.hpp"
#include "polyinfer/quant.hpp"

namespace polyinfer {
namespace {

template <typename F>
ErrorCode code_of(F&& f, std::string* message) {
  try {
    f();
  } catch (const Error& e) {
    *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no Error thrown";
  return ErrorCode::kIo;
}

std::vector<float> floats(size_t n) {
  return std::vector<float>(n, 0.5f);
}

TEST(QuantErrors, PartialBlockIsInvalidArgument) {
  std::vector<uint8_t> bytes(1024, 0);
  std::vector<float> out(1024);
  const std::vector<float> in = floats(1024);
  const struct {
    GgmlType type;
    int64_t n;
  } cases[] = {{GgmlType::Q4_0, 33},  {GgmlType::Q8_0, 31},  {GgmlType::Q4_K, 255},
               {GgmlType::Q6_K, 300}, {GgmlType::Q2_K, 128}, {GgmlType::F16, -1}};
  for (const auto& c : cases) {
    std::string msg;
    EXPECT_EQ(code_of([&] { dequantize_row(c.type, bytes.data(), out.data(), c.n); }, &msg),
              ErrorCode::kInvalidArgument)
        << type_name(c.type);
    EXPECT_NE(msg.find("block size"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    if (!traits(c.type).quantizable) continue;
    EXPECT_EQ(code_of([&] { quantize_row(c.type, in.data(), bytes.data(), c.n); }, &msg),
              ErrorCode::kInvalidArgument)
        << type_name(c.type);
  }
}

TEST(QuantErrors, UnsupportedTypeNamesTheType) {
  std::vector<uint8_t> bytes(4096, 0);
  std::vector<float> out(256);
  const std::vector<float> in = floats(256);
  for (GgmlType type : {GgmlType::Q8_1, GgmlType::Q8_K, GgmlType::IQ2_XXS, GgmlType::IQ4_NL,
                        GgmlType::TQ1_0, GgmlType::I32, GgmlType::MXFP4}) {
    const std::string name(type_name(type));
    std::string msg;
    EXPECT_EQ(code_of([&] { dequantize_row(type, bytes.data(), out.data(), 256); }, &msg),
              ErrorCode::kUnsupported)
        << name;
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_EQ(code_of([&] { quantize_row(type, in.data(), bytes.data(), 256); }, &msg),
              ErrorCode::kUnsupported)
        << name;
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
  }
}

TEST(QuantErrors, DequantizeOnlyKQuantsRejectQuantize) {
  std::vector<uint8_t> bytes(4096, 0);
  const std::vector<float> in = floats(256);
  for (GgmlType type : {GgmlType::Q2_K, GgmlType::Q3_K}) {
    std::string msg;
    EXPECT_EQ(code_of([&] { quantize_row(type, in.data(), bytes.data(), 256); }, &msg),
              ErrorCode::kUnsupported)
        << type_name(type);
    EXPECT_NE(msg.find(type_name(type)), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace polyinfer
