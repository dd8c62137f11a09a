// Seeded random inputs for the conformance tests: every case draws fresh data
// from its own std::mt19937_64, seeded from the case's name, so a failure
// reproduces exactly and no two cases share data. Never zeros.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

#include "host_tensor.hpp"

namespace polyinfer::conformance {

using Rng = std::mt19937_64;

// A fixed seed per case name (FNV-1a, 64 bit).
uint64_t case_seed(std::string_view case_name);

// Every element ~ N(mean, sigma), stored in t.type through the reference
// quantizer (F32, F16, BF16, Q8_0, ...: any type with traits().quantizable).
void fill_normal(HostTensor& t, Rng& rng, double sigma = 1.0, double mean = 0.0);

// Block types: random bytes in every block (all codes, scales and high bits
// occur), with the F16 scale fields (d, m, dmin) set to finite values of
// magnitude 2^-8..2^-5 and random sign. Any bit pattern of the other fields is
// a valid block, so this covers what a quantizer would not produce (Q8_0's
// -128, Q3_K's negative scales).
void fill_random_blocks(HostTensor& t, Rng& rng);

// Weights for MUL_MAT and GET_ROWS: fill_normal for F32/F16/BF16,
// fill_random_blocks for block types.
void fill_weights(HostTensor& t, Rng& rng);

}  // namespace polyinfer::conformance
