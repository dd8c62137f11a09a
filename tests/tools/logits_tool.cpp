// polyinfer-logits: evaluates a token list (prompt in batches, then greedy
// generation one token at a time) and writes every position's logits, for the
// float64 NumPy reference test (tests/python/test_logits_reference.py).
//
//   polyinfer-logits -m MODEL --tokens 1,2,3 [-n N_GEN] [-b N_BATCH]
//                    [--cache-type f32|f16|q8_0] [-t THREADS] -o OUT.bin
//
// OUT.bin (little-endian): "PILG", u32 version 1, u32 n_tokens, u32 n_vocab,
// i32 tokens[n_tokens], f32 logits[n_tokens][n_vocab]; logits[i] follows tokens[0..i].
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "polyinfer/dtype.hpp"
#include "polyinfer/error.hpp"
#include "polyinfer/session.hpp"
#include "registry/backend_registry.hpp"

namespace {

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) ids.push_back(static_cast<int32_t>(std::stol(item)));
  return ids;
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

template <typename T>
void put(std::ofstream& out, const T* data, size_t n) {
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(T)));
}

// Every device of a usable backend, through the registry (search path, probe).
std::vector<polyinfer::DeviceSpec> backend_devices(const std::string& name) {
  if (name == "cpu") return {};
  const polyinfer::BackendRegistry reg(polyinfer::RegistryOptions::from_environment());
  const polyinfer::BackendEntry* b = reg.find(name);
  if (b == nullptr || !b->usable()) {
    throw polyinfer::Error(
        polyinfer::ErrorCode::kUnsupported,
        "backend " + name + " is not usable: " + (b ? b->status_line() : std::string("not found")));
  }
  std::vector<polyinfer::DeviceSpec> out;
  for (size_t i = 0; i < b->devices.size(); ++i)
    out.push_back({b->vtable, static_cast<int>(i), ""});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"polyinfer-logits: dump per-position logits"};
  std::string model, tokens_arg, out_path, cache = "f16";
  std::string backend = "cpu", ngl = "all";
  int n_gen = 0, threads = 0;
  int64_t n_batch = 512;
  app.add_option("-m,--model", model)->required();
  app.add_option("--tokens", tokens_arg)->required();
  app.add_option("-n", n_gen);
  app.add_option("-b", n_batch);
  app.add_option("--cache-type", cache);
  app.add_option("-t", threads);
  app.add_option("--backend", backend, "a usable backend's name: all its devices");
  app.add_option("--ngl", ngl, "layers on that backend: a count or all");
  app.add_option("-o", out_path)->required();
  CLI11_PARSE(app, argc, argv);
  try {
    polyinfer::SessionParams p;
    p.n_threads = threads;
    p.n_batch = n_batch;
    const auto cache_type = polyinfer::parse_type_name(cache);
    if (!cache_type)
      throw polyinfer::Error(polyinfer::ErrorCode::kInvalidArgument,
                             "unknown --cache-type " + cache);
    p.cache_type = *cache_type;
    p.devices = backend_devices(backend);
    p.placement.n_gpu_layers = ngl == "all" ? polyinfer::kGpuLayersAll : std::stoi(ngl);
    p.notice = [](const std::string& line) { std::fprintf(stderr, "note: %s\n", line.c_str()); };
    auto s = polyinfer::Session::open(model, p);
    std::vector<int32_t> tokens = parse_ids(tokens_arg);
    const size_t v = static_cast<size_t>(s->model().n_vocab);
    std::span<const float> l = s->eval(tokens, true);
    std::vector<float> logits(l.begin(), l.end());
    for (int i = 0; i < n_gen; ++i) {
      const int32_t next = argmax(std::span<const float>(logits).last(v));
      tokens.push_back(next);
      l = s->eval(std::span<const int32_t>(&tokens.back(), 1), true);
      logits.insert(logits.end(), l.begin(), l.end());
    }
    std::ofstream out(out_path, std::ios::binary);
    const uint32_t head[] = {1, static_cast<uint32_t>(tokens.size()), static_cast<uint32_t>(v)};
    out.write("PILG", 4);
    put(out, head, 3);
    put(out, tokens.data(), tokens.size());
    put(out, logits.data(), logits.size());
    if (!out) throw polyinfer::Error(polyinfer::ErrorCode::kIo, "cannot write " + out_path);
  } catch (const std::exception& e) {
    std::cerr << "polyinfer-logits: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
