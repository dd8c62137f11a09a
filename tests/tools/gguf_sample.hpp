// A seeded GGUF holding every metadata value type (nested arrays included) and
// random tensors of every ggml type with a known block layout. Shared by the gtest
// round-trip tests, the fuzz seed corpus and the gguf-py cross-check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "polyinfer/gguf_writer.hpp"

namespace polyinfer::testing {

// Declares the sample's metadata and tensors on w; returns each tensor's bytes.
std::vector<std::vector<uint8_t>> build_sample(uint64_t seed, GgufWriter& w);
// The whole file in memory.
std::vector<uint8_t> sample_bytes(uint64_t seed, uint32_t alignment = kGgufDefaultAlignment);
void write_sample_gguf(uint64_t seed, const std::string& path);

}  // namespace polyinfer::testing
