#include "expect_within.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace polyinfer::conformance {
namespace {

constexpr size_t kReported = 5;

struct Miss {
  size_t index;
  double excess;  // |got - want| / bound, +inf for NaN or a zero bound
};

std::string position(size_t flat, const Shape& ne) {
  std::string s = "(";
  for (int d = 0; d < 4; ++d) {
    s += std::to_string(flat % ne[d]) + (d < 3 ? "," : ")");
    flat /= ne[d];
  }
  return s;
}

}  // namespace

void expect_within(std::span<const double> got, std::span<const double> want,
                   std::span<const double> bound, const Shape& ne, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(got.size(), bound.size()) << what;
  std::vector<Miss> misses;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    if (err <= bound[i]) continue;  // false for NaN
    misses.push_back({i, bound[i] > 0 && !std::isnan(err) ? err / bound[i] : INFINITY});
  }
  if (misses.empty()) return;
  std::sort(misses.begin(), misses.end(),
            [](const Miss& a, const Miss& b) { return a.excess > b.excess; });
  std::string detail;
  for (size_t j = 0; j < std::min(kReported, misses.size()); ++j) {
    const size_t i = misses[j].index;
    char line[200];
    std::snprintf(line, sizeof line, "\n  at %s got %.9g want %.9g bound %.3g",
                  position(i, ne).c_str(), got[i], want[i], bound[i]);
    detail += line;
  }
  ADD_FAILURE() << what << ": " << misses.size() << " of " << got.size()
                << " elements outside the bound; worst:" << detail;
}

void expect_output(const HostTensor& dst, std::span<const double> want,
                   std::span<const double> bound, const std::string& what) {
  expect_within(dst.values(), want, bound, dst.ne, what);
  EXPECT_EQ(count_written_outside_view(dst), 0)
      << what << ": bytes outside the destination view were written";
}

}  // namespace polyinfer::conformance
