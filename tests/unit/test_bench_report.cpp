// `polyinfer bench` statistics against float64 references, the shapes of its
// markdown/CSV/JSON reports, and its comma-list flag parser.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_report.hpp"
#include "int_list.hpp"
#include "polyinfer/error.hpp"

namespace polyinfer::cli {
namespace {

// Timings of a few hundred ms with a few percent of jitter, like real repetitions.
std::vector<double> random_samples_ns(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> base(5e7, 5e8), jitter(0.97, 1.03);
  const double b = base(rng);
  std::vector<double> out(n);
  for (double& x : out) x = b * jitter(rng);
  return out;
}

BenchResult result(int n_prompt, int n_gen, std::vector<double> samples_ns) {
  BenchResult r;
  r.model_desc = "llama 1B Q4_0";
  r.model_bytes = 661ull << 20;
  r.n_params = 1'235'814'400;
  r.backend = "CPU";
  r.n_threads = 2;
  r.n_prompt = n_prompt;
  r.n_gen = n_gen;
  r.samples_ns = std::move(samples_ns);
  return r;
}

// Float64 reference: the sample variance as the mean squared pairwise difference,
// sum_{i<j} (x_i - x_j)^2 / (n (n - 1)), a formula independent of the one under test.
double pairwise_stddev(const std::vector<double>& x) {
  if (x.size() < 2) return 0.0;
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    for (size_t j = i + 1; j < x.size(); ++j) sum += (x[i] - x[j]) * (x[i] - x[j]);
  }
  const double n = static_cast<double>(x.size());
  return std::sqrt(sum / (n * (n - 1.0)));
}

double plain_mean(const std::vector<double>& x) {
  double sum = 0.0;
  for (const double v : x) sum += v;
  return sum / static_cast<double>(x.size());
}

TEST(BenchResult, StatisticsMatchAFloat64Reference) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const size_t n = 1 + seed % 12;
    const int n_prompt = seed % 3 == 2 ? 0 : 512;
    const int n_gen = seed % 3 == 1 ? 0 : 128;
    const BenchResult r = result(n_prompt, n_gen, random_samples_ns(n, seed));
    std::vector<double> tps;
    for (const double ns : r.samples_ns) tps.push_back((n_prompt + n_gen) / (ns / 1e9));
    // Different but exact-in-float64 formulas: agreement to 1e-12 relative.
    EXPECT_NEAR(r.mean_tps(), plain_mean(tps), 1e-12 * plain_mean(tps)) << seed;
    EXPECT_NEAR(r.stddev_tps(), pairwise_stddev(tps), 1e-9 * plain_mean(tps)) << seed;
    EXPECT_NEAR(r.mean_ns(), plain_mean(r.samples_ns), 1e-12 * plain_mean(r.samples_ns));
    EXPECT_NEAR(r.stddev_ns(), pairwise_stddev(r.samples_ns), 1e-9 * plain_mean(r.samples_ns));
    ASSERT_EQ(r.samples_tps().size(), n);
    if (n == 1) {
      EXPECT_EQ(r.stddev_tps(), 0.0);
    }
  }
}

TEST(BenchResult, KnownNumbers) {
  // 512 tokens in 1 s, 2 s, 4 s: 512, 256, 128 t/s; mean 298.67, sample sd 195.52.
  const BenchResult r = result(512, 0, {1e9, 2e9, 4e9});
  EXPECT_DOUBLE_EQ(r.mean_tps(), 896.0 / 3.0);
  EXPECT_NEAR(r.stddev_tps(),
              std::sqrt((std::pow(512 - 896.0 / 3, 2) + std::pow(256 - 896.0 / 3, 2) +
                         std::pow(128 - 896.0 / 3, 2)) /
                        2.0),
              1e-9);
}

TEST(BenchResult, TestNames) {
  EXPECT_EQ(result(512, 0, {1.0}).test_name(), "pp512");
  EXPECT_EQ(result(0, 128, {1.0}).test_name(), "tg128");
  EXPECT_EQ(result(512, 128, {1.0}).test_name(), "pp512+tg128");
  EXPECT_THROW(result(0, 0, {1.0}).test_name(), Error);
  EXPECT_THROW(result(-1, 128, {1.0}).test_name(), Error);
}

TEST(BenchResult, BadSamplesThrow) {
  const std::vector<std::vector<double>> bad = {{}, {1e9, 0.0}, {-5.0}, {std::nan("")}, {INFINITY}};
  for (const auto& samples : bad) {
    const BenchResult r = result(512, 0, samples);
    EXPECT_THROW(r.mean_tps(), Error);
    EXPECT_THROW(r.stddev_ns(), Error);
    EXPECT_THROW(format_markdown({r}), Error);
  }
}

std::vector<BenchResult> three_results() {
  std::vector<BenchResult> rs = {result(512, 0, random_samples_ns(5, 1)),
                                 result(0, 128, random_samples_ns(5, 2)),
                                 result(512, 128, random_samples_ns(5, 3))};
  rs[1].model_desc = "qwen2 7B Q8_0";
  rs[1].model_bytes = 7'700'000'000;  // 7.17 GiB
  rs[1].n_params = 7'615'616'512;
  rs[2].n_params = 494'032'768;    // 494.03 M
  rs[2].model_bytes = 1ull << 30;  // exactly 1 GiB
  return rs;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Markdown cells between the pipes, trimmed.
std::vector<std::string> markdown_cells(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = line.find('|') + 1;
  for (size_t bar; (bar = line.find('|', start)) != std::string::npos; start = bar + 1) {
    const std::string cell = line.substr(start, bar - start);
    const size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
    cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  return cells;
}

size_t utf8_chars(const std::string& s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string two_decimals(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

TEST(BenchReport, MarkdownIsLlamaBenchsTable) {
  const auto rs = three_results();
  const std::string md = format_markdown(rs);
  ASSERT_EQ(md.back(), '\n');
  const auto lines = lines_of(md);
  ASSERT_EQ(lines.size(), rs.size() + 2);
  EXPECT_EQ(
      markdown_cells(lines[0]),
      (std::vector<std::string>{"model", "size", "params", "backend", "threads", "test", "t/s"}));
  EXPECT_EQ(markdown_cells(lines[1]).size(), 7u);
  // Right-aligned numeric columns end their rule in ':', text columns do not.
  const auto rule = markdown_cells(lines[1]);
  const std::string alignment = "-::-:::";
  for (size_t c = 0; c < 7; ++c) EXPECT_EQ(rule[c].back(), alignment[c]) << c;
  for (const std::string& line : lines) {
    EXPECT_EQ(utf8_chars(line), utf8_chars(lines[0])) << "misaligned: " << line;
  }
  const auto row0 = markdown_cells(lines[2]), row1 = markdown_cells(lines[3]),
             row2 = markdown_cells(lines[4]);
  EXPECT_EQ(row0, (std::vector<std::string>{
                      "llama 1B Q4_0", "661.00 MiB", "1.24 B", "CPU", "2", "pp512",
                      two_decimals(rs[0].mean_tps()) + " ± " + two_decimals(rs[0].stddev_tps())}));
  EXPECT_EQ(row1[0], "qwen2 7B Q8_0");
  EXPECT_EQ(row1[1], "7.17 GiB");
  EXPECT_EQ(row1[2], "7.62 B");
  EXPECT_EQ(row1[5], "tg128");
  EXPECT_EQ(row2[1], "1.00 GiB");
  EXPECT_EQ(row2[2], "494.03 M");
  EXPECT_EQ(row2[5], "pp512+tg128");
  // llama-bench's minimum widths: "| " + 30 + " |" for the model column.
  EXPECT_EQ(lines[0].find('|', 1), 33u);
}

TEST(BenchReport, MarkdownWidensForLongCells) {
  auto rs = three_results();
  rs[0].model_desc = std::string(45, 'x');
  const auto lines = lines_of(format_markdown(rs));
  for (const std::string& line : lines) EXPECT_EQ(utf8_chars(line), utf8_chars(lines[0]));
  EXPECT_EQ(markdown_cells(lines[2])[0], rs[0].model_desc);
}

// RFC 4180 fields of one line: quoted fields with "" for a quote.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

TEST(BenchReport, CsvHasTwelveColumnsAndRoundTrips) {
  auto rs = three_results();
  rs[0].model_desc = "odd \"name\", with comma";
  const auto lines = lines_of(format_csv(rs));
  ASSERT_EQ(lines.size(), rs.size() + 1);
  const auto header = csv_fields(lines[0]);
  EXPECT_EQ(header, (std::vector<std::string>{"model_type", "model_size", "model_n_params",
                                              "backends", "n_threads", "n_prompt", "n_gen", "test",
                                              "avg_ns", "stddev_ns", "avg_ts", "stddev_ts"}));
  for (size_t i = 0; i < rs.size(); ++i) {
    const auto f = csv_fields(lines[i + 1]);
    ASSERT_EQ(f.size(), header.size()) << lines[i + 1];
    EXPECT_EQ(f[0], rs[i].model_desc);
    EXPECT_EQ(std::stoull(f[1]), rs[i].model_bytes);
    EXPECT_EQ(std::stoull(f[2]), rs[i].n_params);
    EXPECT_EQ(f[3], "CPU");
    EXPECT_EQ(std::stoi(f[4]), 2);
    EXPECT_EQ(std::stoi(f[5]), rs[i].n_prompt);
    EXPECT_EQ(std::stoi(f[6]), rs[i].n_gen);
    EXPECT_EQ(f[7], rs[i].test_name());
    EXPECT_NEAR(std::stod(f[8]), rs[i].mean_ns(), 0.5);  // whole ns
    EXPECT_NEAR(std::stod(f[9]), rs[i].stddev_ns(), 0.5);
    EXPECT_NEAR(std::stod(f[10]), rs[i].mean_tps(), 5e-7);  // 6 decimals
    EXPECT_NEAR(std::stod(f[11]), rs[i].stddev_tps(), 5e-7);
  }
}

TEST(BenchReport, JsonParsesBackWithSamplesAndStatistics) {
  const auto rs = three_results();
  const auto j = nlohmann::json::parse(format_json(rs));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), rs.size());
  for (size_t i = 0; i < rs.size(); ++i) {
    const auto& o = j[i];
    EXPECT_EQ(o.size(), 14u);
    EXPECT_EQ(o["model_type"], rs[i].model_desc);
    EXPECT_EQ(o["model_size"].get<uint64_t>(), rs[i].model_bytes);
    EXPECT_EQ(o["model_n_params"].get<uint64_t>(), rs[i].n_params);
    EXPECT_EQ(o["backends"], "CPU");
    EXPECT_EQ(o["n_threads"], 2);
    EXPECT_EQ(o["n_prompt"], rs[i].n_prompt);
    EXPECT_EQ(o["n_gen"], rs[i].n_gen);
    EXPECT_EQ(o["test"], rs[i].test_name());
    // nlohmann writes doubles in round-trip form: equality is exact.
    EXPECT_EQ(o["avg_ns"].get<double>(), rs[i].mean_ns());
    EXPECT_EQ(o["stddev_ns"].get<double>(), rs[i].stddev_ns());
    EXPECT_EQ(o["avg_ts"].get<double>(), rs[i].mean_tps());
    EXPECT_EQ(o["stddev_ts"].get<double>(), rs[i].stddev_tps());
    EXPECT_EQ(o["samples_ns"].get<std::vector<double>>(), rs[i].samples_ns);
    EXPECT_EQ(o["samples_ts"].get<std::vector<double>>(), rs[i].samples_tps());
  }
  EXPECT_EQ(nlohmann::json::parse(format_json({})), nlohmann::json::array());
}

TEST(IntList, ParsesCommaLists) {
  EXPECT_EQ(parse_int_list("512", "-p"), (std::vector<int>{512}));
  EXPECT_EQ(parse_int_list("512,1024", "-p"), (std::vector<int>{512, 1024}));
  EXPECT_EQ(parse_int_list("0", "-n"), (std::vector<int>{0}));
  EXPECT_EQ(parse_int_list("1,2,1,007", "-t"), (std::vector<int>{1, 2, 1, 7}));
  EXPECT_EQ(parse_int_list("2147483647", "-r"), (std::vector<int>{2147483647}));
}

TEST(IntList, RejectsBadItemsWithAOneLineMessage) {
  for (const char* bad : {"", "5,,6", ",5", "5,", "-1", "+1", "abc", " 5", "5 ", "1e3", "0x10",
                          "2147483648", "99999999999999999999", "4,\n"}) {
    try {
      parse_int_list(bad, "-p");
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(what.rfind("-p: ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace polyinfer::cli
