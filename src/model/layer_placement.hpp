// Which device holds each layer of a model: llama.cpp's -ngl / --split-mode /
// --tensor-split / --main-gpu semantics (docs/BACKENDS.md, "Placement").
//
// A model has n_layer repeating layers plus the output (final norm and output
// matrix), n_layer + 1 units in all. -ngl N puts the last min(N, n_layer)
// layers on the accelerators, and the output too once N > n_layer (so
// N = n_layer + 1 offloads everything), as llama.cpp does; the token
// embeddings always stay on the CPU, which only gathers rows from them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "polyinfer/session.hpp"

namespace polyinfer {

// One device of a run as placement sees it. The CPU is the last one.
struct PlacementDevice {
  std::string name;          // "cuda:0"
  uint64_t memory_free = 0;  // bytes
  uint64_t memory_total = 0;
};

struct ModelFootprint {
  uint64_t layer_bytes = 0;   // the largest layer's weights plus its KV cache
  uint64_t output_bytes = 0;  // final norm and output matrix
};

struct LayerMap {
  std::vector<int> layer_device;  // per layer: index into the devices
  int output_device = 0;
  int n_gpu_layers = 0;              // units placed on accelerators (output included)
  std::vector<std::string> reasons;  // how -ngl was resolved, one line each
};

// Memory left free on each accelerator by -ngl auto: max(kAutoMarginMin, 5% of total),
// for the activations, the CUDA context and other processes.
inline constexpr uint64_t kAutoMarginMin = 512ull << 20;

// Throws Error(kInvalidArgument) for a bad --tensor-split (wrong count, negative, all
// zero), a --main-gpu out of range, or n_gpu_layers below -1.
LayerMap place_layers(int n_layer, const ModelFootprint& size,
                      const std::vector<PlacementDevice>& devices, const PlacementParams& params);

}  // namespace polyinfer
