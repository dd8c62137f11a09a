// `polyinfer info FILE [--tensors] [--metadata] [--json]`: what a GGUF file holds.
#include <cstdio>
#include <string>

#include "cli_error.hpp"
#include "commands.hpp"
#include "info_report.hpp"

namespace polyinfer::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string str(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v.get<double>());
    return buf;
  }
  return v.dump();
}

void line(const char* label, const std::string& value) {
  std::printf("%-14s %s\n", label, value.c_str());
}

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

void print_model(const Json& r) {
  const Json& h = r["hparams"];
  line("architecture", str(r["architecture"]));
  line("name", str(r["name"]));
  line("layers", str(h["block_count"]));
  line("n_embd", str(h["embedding_length"]));
  line("n_ff", str(h["feed_forward_length"]));
  line("heads", str(h["head_count"]) + "/" + str(h["head_count_kv"]) +
                    " (n_head/n_head_kv), head_dim " + str(h["head_dim"]));
  line("context", str(h["context_length"]));
  line("rope", "dims " + str(h["rope_dimension_count"]) + ", freq_base " +
                   str(h["rope_freq_base"]) +
                   (h["rope_freq_base_is_default"].get<bool>() ? " (default)" : ""));
  line("rms_norm_eps", str(h["layer_norm_rms_epsilon"]));
  line("vocab", str(h["vocab_size"]));
}

void print_tokenizer(const Json& t) {
  std::string s = str(t["model"]);
  if (t["kind"].is_string() && !t["kind"].get<std::string>().empty()) {
    s += " (" + t["kind"].get<std::string>() + ")";
  }
  if (!t["pre"].is_null()) s += ", pre " + str(t["pre"]);
  s += ", " + str(t["n_tokens"]) + " tokens";
  if (t["n_merges"].get<uint64_t>() > 0) s += ", " + str(t["n_merges"]) + " merges";
  for (const char* k : {"bos", "eos", "eot", "unknown", "padding"}) {
    const Json& id = t[std::string(k) + "_token_id"];
    if (!id.is_null()) s += ", " + std::string(k) + " " + str(id);
  }
  if (!t["add_bos_token"].is_null()) s += ", add_bos " + str(t["add_bos_token"]);
  line("tokenizer", s);
}

void print_tensors(const Json& r) {
  line("tensors", str(r["n_tensors"]) + ", " + str(r["n_params"]) + " parameters");
  for (const auto& [type, e] : r["tensor_types"].items()) {
    std::printf("  %-12s %s tensors, %s bytes (%s)\n", type.c_str(), str(e["count"]).c_str(),
                str(e["bytes"]).c_str(), mib(e["bytes"].get<uint64_t>()).c_str());
  }
  if (!r.contains("tensors")) return;
  std::printf("\n%-40s %-6s %-24s %14s %14s\n", "name", "type", "shape", "offset", "bytes");
  for (const Json& t : r["tensors"]) {
    std::printf("%-40s %-6s %-24s %14s %14s\n", str(t["name"]).c_str(), str(t["type"]).c_str(),
                str(t["shape"]).c_str(), str(t["offset"]).c_str(), str(t["bytes"]).c_str());
  }
}

void print_metadata(const Json& r) {
  if (!r.contains("metadata")) return;
  std::printf("\nmetadata:\n");
  for (const Json& kv : r["metadata"]) {
    std::printf("  %-44s %-8s %s\n", str(kv["key"]).c_str(), str(kv["type"]).c_str(),
                kv["value"].dump().c_str());
  }
}

void print_text(const Json& r) {
  line("file", str(r["file"]));
  line("size", str(r["file_size"]) + " bytes (" + mib(r["file_size"].get<uint64_t>()) + ")");
  line("gguf", "v" + str(r["gguf_version"]) + ", " + str(r["n_metadata"]) +
                   " metadata keys, alignment " + str(r["alignment"]) + ", data at byte " +
                   str(r["data_offset"]));
  print_model(r);
  print_tokenizer(r["tokenizer"]);
  print_tensors(r);
  print_metadata(r);
}

}  // namespace

void add_info_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("info", "Show what a GGUF file holds");
  auto path = std::make_shared<std::string>();
  auto opts = std::make_shared<InfoOptions>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("file", *path, "GGUF file")->required();
  cmd->add_flag("--tensors", opts->tensors, "List every tensor (name, type, shape, offset, bytes)");
  cmd->add_flag("--metadata", opts->metadata, "List every metadata key and value");
  cmd->add_flag("--json", *json, "Print JSON instead of text");
  cmd->callback([=, &exit_code] {
    exit_code = run_guarded([&] {
      const Json report = info_report(GgufFile::open(*path), *opts);
      if (*json) {
        std::printf("%s\n", report.dump(2).c_str());
      } else {
        print_text(report);
      }
      return 0;
    });
  });
}

}  // namespace polyinfer::cli
