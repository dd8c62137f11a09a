// Element-wise comparison of a backend's output with the float64 reference.
#pragma once

#include <span>
#include <string>

#include "host_tensor.hpp"

namespace polyinfer::conformance {

// Records one gtest failure when any |got[i] - want[i]| > bound[i] (a NaN in
// got, e.g. an element left poisoned, always fails), naming how many elements
// failed and the worst few by index (i0, i1, i2, i3) in the shape ne.
void expect_within(std::span<const double> got, std::span<const double> want,
                   std::span<const double> bound, const Shape& ne, const std::string& what);

// The destination as a backend returned it: every element decoded, and no
// byte outside its view touched.
void expect_output(const HostTensor& dst, std::span<const double> want,
                   std::span<const double> bound, const std::string& what);

}  // namespace polyinfer::conformance
