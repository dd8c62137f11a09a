// The markdown, CSV and JSON reports of `polyinfer bench`.
#include "bench_report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace polyinfer::cli {
namespace {

template <typename... Args>
std::string printf_string(const char* format, Args... args) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// llama-bench's units: MiB below 1 GiB, else GiB.
std::string format_size(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < (uint64_t{1} << 30)) return printf_string("%.2f MiB", b / (1024.0 * 1024.0));
  return printf_string("%.2f GiB", b / (1024.0 * 1024.0 * 1024.0));
}

// llama-bench's units: M below 10^9 parameters, else B.
std::string format_params(uint64_t n) {
  const double x = static_cast<double>(n);
  if (n < 1'000'000'000) return printf_string("%.2f M", x / 1e6);
  return printf_string("%.2f B", x / 1e9);
}

struct Column {
  const char* header;
  size_t min_width;  // llama-bench's widths, so short tables look the same
  bool right_aligned;
};

constexpr std::array<Column, 7> kColumns = {{{"model", 30, false},
                                             {"size", 10, true},
                                             {"params", 10, true},
                                             {"backend", 10, false},
                                             {"threads", 7, true},
                                             {"test", 13, true},
                                             {"t/s", 20, true}}};

using Row = std::array<std::string, kColumns.size()>;

Row markdown_row(const BenchResult& r) {
  return {r.model_desc,
          format_size(r.model_bytes),
          format_params(r.n_params),
          r.backend,
          std::to_string(r.n_threads),
          r.test_name(),
          printf_string("%.2f ± %.2f", r.mean_tps(), r.stddev_tps())};
}

// Characters, not bytes: UTF-8 continuation bytes do not take a column.
size_t display_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad(const std::string& s, size_t width, bool right_aligned) {
  const std::string fill(width - std::min(width, display_width(s)), ' ');
  return right_aligned ? fill + s : s + fill;
}

std::string markdown_line(const Row& cells, const std::array<size_t, kColumns.size()>& widths) {
  std::string line;
  for (size_t c = 0; c < kColumns.size(); ++c) {
    line += "| " + pad(cells[c], widths[c], kColumns[c].right_aligned) + " ";
  }
  return line + "|\n";
}

// "| ---: |" for a right-aligned column, "| ---- |" for a left-aligned one.
std::string markdown_rule(const std::array<size_t, kColumns.size()>& widths) {
  std::string line;
  for (size_t c = 0; c < kColumns.size(); ++c) {
    line += "| " + std::string(widths[c] - 1, '-') + (kColumns[c].right_aligned ? ":" : "-") + " ";
  }
  return line + "|\n";
}

std::string csv_field(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string whole(double x) {
  return printf_string("%.0f", x);
}

}  // namespace

std::string format_markdown(const std::vector<BenchResult>& results) {
  Row header;
  std::array<size_t, kColumns.size()> widths{};
  for (size_t c = 0; c < kColumns.size(); ++c) {
    header[c] = kColumns[c].header;
    widths[c] = std::max(kColumns[c].min_width, display_width(header[c]));
  }
  std::vector<Row> rows;
  for (const BenchResult& r : results) {
    rows.push_back(markdown_row(r));
    for (size_t c = 0; c < kColumns.size(); ++c) {
      widths[c] = std::max(widths[c], display_width(rows.back()[c]));
    }
  }
  std::string out = markdown_line(header, widths) + markdown_rule(widths);
  for (const Row& row : rows) out += markdown_line(row, widths);
  return out;
}

std::string format_csv(const std::vector<BenchResult>& results) {
  std::string out =
      "model_type,model_size,model_n_params,backends,n_threads,n_prompt,n_gen,test,"
      "avg_ns,stddev_ns,avg_ts,stddev_ts\n";
  for (const BenchResult& r : results) {
    const std::string fields[] = {r.model_desc,
                                  std::to_string(r.model_bytes),
                                  std::to_string(r.n_params),
                                  r.backend,
                                  std::to_string(r.n_threads),
                                  std::to_string(r.n_prompt),
                                  std::to_string(r.n_gen),
                                  r.test_name(),
                                  whole(r.mean_ns()),
                                  whole(r.stddev_ns()),
                                  printf_string("%.6f", r.mean_tps()),
                                  printf_string("%.6f", r.stddev_tps())};
    for (size_t i = 0; i < std::size(fields); ++i) {
      if (i > 0) out += ',';
      out += csv_field(fields[i]);
    }
    out += '\n';
  }
  return out;
}

std::string format_json(const std::vector<BenchResult>& results) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const BenchResult& r : results) {
    out.push_back({{"model_type", r.model_desc},
                   {"model_size", r.model_bytes},
                   {"model_n_params", r.n_params},
                   {"backends", r.backend},
                   {"n_threads", r.n_threads},
                   {"n_prompt", r.n_prompt},
                   {"n_gen", r.n_gen},
                   {"test", r.test_name()},
                   {"avg_ns", r.mean_ns()},
                   {"stddev_ns", r.stddev_ns()},
                   {"avg_ts", r.mean_tps()},
                   {"stddev_ts", r.stddev_tps()},
                   {"samples_ns", r.samples_ns},
                   {"samples_ts", r.samples_tps()}});
  }
  // Model names come from GGUF metadata: replace invalid UTF-8 rather than throw.
  return out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace polyinfer::cli
