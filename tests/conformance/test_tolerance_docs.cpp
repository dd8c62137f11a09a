// The tolerance table in docs/OPS.md is the one the tests use: every row of
// tolerances.cpp appears there verbatim, in the same order.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tolerances.hpp"

namespace polyinfer::conformance {
namespace {

TEST(ToleranceTable, DocsMatchTheTests) {
  std::ifstream in(POLYINFER_OPS_DOC);
  ASSERT_TRUE(in) << "cannot read " << POLYINFER_OPS_DOC;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  size_t at = 0;
  for (const ToleranceRow& row : tolerance_table()) {
    const std::string line = markdown_row(row);
    const size_t found = doc.find(line, at);
    ASSERT_NE(found, std::string::npos) << "docs/OPS.md lacks (or misorders) the row\n" << line;
    at = found + line.size();
  }
}

}  // namespace
}  // namespace polyinfer::conformance
