// -ngl / --split-mode / --tensor-split / --main-gpu resolve to the layer map
// llama.cpp users expect (layer_placement.hpp).
#include <gtest/gtest.h>

#include "model/layer_placement.hpp"
#include "polyinfer/error.hpp"

namespace polyinfer {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
const ModelFootprint kSize{10 * kMiB, 30 * kMiB};

PlacementDevice gpu(const char* name, uint64_t free_mib, uint64_t total_mib = 8192) {
  return {name, free_mib * kMiB, total_mib * kMiB};
}
const PlacementDevice kCpu{"cpu:0", 0, 0};

PlacementParams ngl(int n) {
  PlacementParams p;
  p.n_gpu_layers = n;
  return p;
}

TEST(LayerPlacement, CpuOnlyKeepsEverythingOnTheCpu) {
  const LayerMap m = place_layers(5, kSize, {kCpu}, ngl(kGpuLayersAll));
  EXPECT_EQ(m.layer_device, std::vector<int>(5, 0));
  EXPECT_EQ(m.output_device, 0);
  EXPECT_EQ(m.n_gpu_layers, 0);
}

TEST(LayerPlacement, NglCountsTheLastLayersThenTheOutput) {
  const std::vector<PlacementDevice> devs{gpu("cuda:0", 4096), kCpu};
  LayerMap m = place_layers(5, kSize, devs, ngl(3));
  EXPECT_EQ(m.layer_device, (std::vector<int>{1, 1, 0, 0, 0}));
  EXPECT_EQ(m.output_device, 1);  // the output needs n_layer + 1
  m = place_layers(5, kSize, devs, ngl(5));
  EXPECT_EQ(m.layer_device, std::vector<int>(5, 0));
  EXPECT_EQ(m.output_device, 1);
  m = place_layers(5, kSize, devs, ngl(6));
  EXPECT_EQ(m.output_device, 0);
  EXPECT_EQ(m.n_gpu_layers, 6);
  m = place_layers(5, kSize, devs, ngl(0));
  EXPECT_EQ(m.layer_device, std::vector<int>(5, 1));
  EXPECT_EQ(m.n_gpu_layers, 0);
  m = place_layers(5, kSize, devs, ngl(kGpuLayersAll));
  EXPECT_EQ(m.layer_device, std::vector<int>(5, 0));
  EXPECT_EQ(m.output_device, 0);
}

TEST(LayerPlacement, AutoFitsWhatFreeMemoryHoldsAboveTheMargin) {
  // 3 layers of 10 MiB fit above the 512 MiB margin, a 4th does not.
  const std::vector<PlacementDevice> devs{gpu("cuda:0", 512 + 35), kCpu};
  const LayerMap m = place_layers(8, kSize, devs, ngl(kGpuLayersAuto));
  EXPECT_EQ(m.n_gpu_layers, 3);
  EXPECT_EQ(m.layer_device, (std::vector<int>{1, 1, 1, 1, 1, 0, 0, 0}));
  ASSERT_FALSE(m.reasons.empty());
  EXPECT_NE(m.reasons[0].find("3 of 9"), std::string::npos) << m.reasons[0];
  // The margin is 5% of a large card's memory.
  const std::vector<PlacementDevice> big{gpu("cuda:0", 20480 + 110, 409600), kCpu};
  EXPECT_EQ(place_layers(8, kSize, big, ngl(kGpuLayersAuto)).n_gpu_layers, 9);
  const std::vector<PlacementDevice> tight{gpu("cuda:0", 20480 + 15, 409600), kCpu};
  EXPECT_EQ(place_layers(8, kSize, tight, ngl(kGpuLayersAuto)).n_gpu_layers, 1);
}

TEST(LayerPlacement, LayerSplitFollowsTensorSplitRatios) {
  const std::vector<PlacementDevice> devs{gpu("cuda:0", 4096), gpu("cuda:1", 4096), kCpu};
  PlacementParams p = ngl(kGpuLayersAll);
  p.tensor_split = {3, 1};
  const LayerMap m = place_layers(7, kSize, devs, p);  // 8 units: 6 and 2
  EXPECT_EQ(m.layer_device, (std::vector<int>{0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(m.output_device, 1);
  p.tensor_split = {0, 1};
  EXPECT_EQ(place_layers(7, kSize, devs, p).layer_device, std::vector<int>(7, 1));
}

TEST(LayerPlacement, DefaultSplitIsByFreeMemory) {
  const std::vector<PlacementDevice> devs{gpu("cuda:0", 1000), gpu("cuda:1", 3000), kCpu};
  const LayerMap m = place_layers(3, kSize, devs, ngl(kGpuLayersAll));  // 4 units: 1 and 3
  EXPECT_EQ(m.layer_device, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(m.output_device, 1);
}

TEST(LayerPlacement, SplitModeNoneUsesTheMainGpuOnly) {
  const std::vector<PlacementDevice> devs{gpu("cuda:0", 4096), gpu("cuda:1", 4096), kCpu};
  PlacementParams p = ngl(kGpuLayersAll);
  p.split_mode = SplitMode::kNone;
  p.main_gpu = 1;
  const LayerMap m = place_layers(4, kSize, devs, p);
  EXPECT_EQ(m.layer_device, std::vector<int>(4, 1));
  EXPECT_EQ(m.output_device, 1);
}

TEST(LayerPlacement, BadRequestsAreErrors) {
  const std::vector<PlacementDevice> devs{gpu("cuda:0", 4096), kCpu};
  PlacementParams p = ngl(kGpuLayersAll);
  p.tensor_split = {1, 1};
  EXPECT_THROW(place_layers(4, kSize, devs, p), Error);
  p.tensor_split = {0};
  EXPECT_THROW(place_layers(4, kSize, devs, p), Error);
  p.tensor_split = {-1};
  EXPECT_THROW(place_layers(4, kSize, devs, p), Error);
  p.tensor_split.clear();
  p.main_gpu = 1;
  EXPECT_THROW(place_layers(4, kSize, devs, p), Error);
  EXPECT_THROW(place_layers(4, kSize, devs, ngl(-2)), Error);
}

}  // namespace
}  // namespace polyinfer
