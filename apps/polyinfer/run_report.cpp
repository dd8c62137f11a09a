#include "run_report.hpp"

namespace polyinfer::cli {
namespace {

double mib(uint64_t bytes) {
  return bytes / (1024.0 * 1024.0);
}

double per_second(int64_t n, double ms) {
  return ms > 0 ? n * 1000.0 / ms : 0.0;
}

const char* stop_text(StopReason r) {
  switch (r) {
    case StopReason::kEndOfGeneration:
      return "end of text";
    case StopReason::kMaxTokens:
      return "token limit";
    case StopReason::kContextFull:
      return "context full";
    case StopReason::kCancelled:
      return "interrupted";
  }
  return "";
}

}  // namespace

std::function<void(uint64_t, uint64_t)> load_progress_printer() {
  return [last = -1](uint64_t done, uint64_t total) mutable {
    const int pct = total ? static_cast<int>(done * 100 / total) : 100;
    if (pct == last) return;
    last = pct;
    std::fprintf(stderr, pct >= 100 ? "\r%*s\r" : "\rloading model %3d%%", pct >= 100 ? 24 : pct,
                 "");
  };
}

void print_session_report(const Session& s, std::FILE* out) {
  const ModelSummary& m = s.model();
  std::fprintf(out, "model:    %s %s %s, %.2f MiB, %llu params\n", m.arch.c_str(),
               m.size_label.c_str(), m.type_label.c_str(), mib(m.file_bytes),
               static_cast<unsigned long long>(m.n_params));
  std::fprintf(out, "backend:  %s on %s\n", s.backend_name().c_str(), s.device_desc().c_str());
  for (const std::string& line : s.placement_report()) {
    std::fprintf(out, "layers:   %s\n", line.c_str());
  }
  std::fprintf(out, "context:  %lld tokens, batch %lld, KV cache %.2f MiB\n",
               static_cast<long long>(s.n_ctx()), static_cast<long long>(s.n_batch()),
               mib(s.kv_cache_bytes()));
}

void print_memory_report(const Session& s, std::FILE* out) {
  for (const std::string& line : s.memory_report()) {
    std::fprintf(out, "memory:     %s\n", line.c_str());
  }
  const ForwardTimes& t = s.forward_times();
  if (t.passes > 0) {
    const double n = static_cast<double>(t.passes);
    std::fprintf(out,
                 "per pass:   %lld passes: build %.3f ms, schedule %.3f ms, submit %.3f ms, "
                 "wait and read %.3f ms\n",
                 static_cast<long long>(t.passes), t.build_ms / n, t.schedule_ms / n, t.run_ms / n,
                 t.read_ms / n);
  }
}

void print_run_stats(double load_ms, const GenerationStats& st, std::FILE* out) {
  std::fprintf(out, "load:       %10.2f ms\n", load_ms);
  std::fprintf(out, "prompt:     %5lld tokens %10.2f ms %10.2f tok/s\n",
               static_cast<long long>(st.n_prompt), st.prompt_ms,
               per_second(st.n_prompt, st.prompt_ms));
  std::fprintf(out, "generation: %5lld tokens %10.2f ms %10.2f tok/s (stopped: %s)\n",
               static_cast<long long>(st.n_generated), st.gen_ms,
               per_second(st.n_generated, st.gen_ms), stop_text(st.stop));
}

}  // namespace polyinfer::cli
