// `polyinfer backends [--json] [--backend NAME] [--device NAME:INDEX,...] [--priority a,b]`:
// every backend polyinfer knows, whether it works here and why not, its devices, and what
// the given selection (or auto) would pick.
#include <cstdio>
#include <string>

#include "backends_report.hpp"
#include "cli_error.hpp"
#include "commands.hpp"
#include "selection_options.hpp"

namespace polyinfer::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string str(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.is_null() ? "-" : v.dump();
}

void print_device(const std::string& backend, const Json& d) {
  std::string line = "      " + backend + ":" + str(d["index"]) + "  " + str(d["name"]) + "  " +
                     str(d["kind"]) + "  memory " + gib(d["memory_free"].get<uint64_t>()) + "/" +
                     gib(d["memory_total"].get<uint64_t>()) + " GiB free/total";
  for (const auto& [key, label] :
       {std::pair{"driver_version", "driver"}, std::pair{"compute_version", "compute"},
        std::pair{"bus_id", "bus"}}) {
    const std::string v = str(d[key]);
    if (!v.empty()) line += std::string("  ") + label + " " + v;
  }
  std::printf("%s\n", line.c_str());
}

void print_backend(const Json& b) {
  const std::string compiled = b["built_in"].get<bool>()   ? "built in"
                               : b["compiled"].get<bool>() ? "yes"
                               : b["known"].get<bool>()    ? "no"
                                                           : "external";
  std::printf("%-4s  %-10s  %-8s  %s\n", str(b["priority"]).c_str(), str(b["name"]).c_str(),
              compiled.c_str(), str(b["status_line"]).c_str());
  if (!b["plugin"].is_null()) std::printf("      plugin %s\n", str(b["plugin"]).c_str());
  for (const Json& d : b["devices"]) print_device(str(b["name"]), d);
}

void print_text(const Json& r) {
  std::string path;
  for (const Json& dir : r["search_path"]) path += (path.empty() ? "" : ":") + str(dir);
  std::printf("plugin search path: %s\n", path.c_str());
  std::printf("%-4s  %-10s  %-8s  %s\n", "rank", "backend", "compiled", "status");
  for (const Json& b : r["backends"]) print_backend(b);
  std::string picked;
  for (const Json& d : r["selection"]["devices"]) {
    picked += (picked.empty() ? "" : ", ") + str(d["device"]) + " (" + str(d["name"]) + ")";
  }
  std::printf("selected: %s\n", picked.c_str());
  for (const Json& why : r["selection"]["reasons"]) std::printf("  %s\n", str(why).c_str());
}

}  // namespace

void add_backends_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "backends", "List every backend, whether it works here and why not, and what auto picks");
  auto flags = std::make_shared<SelectionFlags>();
  auto json = std::make_shared<bool>(false);
  add_selection_options(*cmd, *flags);
  cmd->add_flag("--json", *json, "Print JSON instead of text");
  cmd->callback([=, &exit_code] {
    exit_code = run_guarded([&] {
      const SelectionRequest request = selection_request(command_line_layer(*flags));
      const BackendRegistry registry(RegistryOptions::from_environment());
      const Json report = backends_report(registry, select_devices(registry, request));
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
