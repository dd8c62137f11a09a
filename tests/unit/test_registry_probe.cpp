// Each way a plugin can fail gets its own status line, crashing and hanging probes included,
// and nothing but a plugin whose child probe succeeded is ever loaded into this process.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "polyinfer/error.hpp"
#include "registry/backend_registry.hpp"
#include "registry/probe_isolated.hpp"
#include "registry/probe_wire.hpp"
#include "registry_test_util.hpp"

namespace polyinfer {
namespace {

using test::options_for;
using test::plugin_dir;

// Whether this process has the library mapped, without loading it.
bool loaded_here(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

class BrokenPlugins : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry_ = std::make_unique<BackendRegistry>(options_for({plugin_dir("broken")}));
  }
  static void TearDownTestSuite() { registry_.reset(); }

  static const BackendEntry& entry(const char* name) {
    const BackendEntry* e = registry_->find(name);
    EXPECT_NE(e, nullptr) << name;
    return *e;
  }
  static void expect_not_loaded(const BackendEntry& e) {
    EXPECT_FALSE(e.usable());
    EXPECT_EQ(e.vtable, nullptr);
    EXPECT_TRUE(e.devices.empty());
    EXPECT_EQ(e.plugin_path, plugin_dir("broken") + "/libpolyinfer-" + e.name + ".so");
  }

  static std::unique_ptr<BackendRegistry> registry_;
};
std::unique_ptr<BackendRegistry> BrokenPlugins::registry_;

TEST_F(BrokenPlugins, MissingSymbol) {
  const BackendEntry& e = entry("cuda");
  EXPECT_EQ(e.status, PluginStatus::kMissingSymbol);
  EXPECT_EQ(e.status_line(),
            "missing symbol: polyinfer_backend_entry not exported by " + e.plugin_path);
  expect_not_loaded(e);
}

TEST_F(BrokenPlugins, AbiMismatchNamesBothVersions) {
  const BackendEntry& e = entry("hip");
  EXPECT_EQ(e.status, PluginStatus::kAbiMismatch);
  EXPECT_EQ(e.status_line(), "ABI mismatch (plugin v" + std::to_string(PI_ABI_VERSION + 1) +
                                 ", host v" + std::to_string(PI_ABI_VERSION) + ")");
  expect_not_loaded(e);
}

TEST_F(BrokenPlugins, CrashingProbeIsBrokenAndNeverLoadedHere) {
  const BackendEntry& e = entry("vulkan");
  EXPECT_EQ(e.status, PluginStatus::kBroken);
  EXPECT_EQ(e.status_line(), "broken: probe crashed (signal 11)");
  expect_not_loaded(e);
  EXPECT_FALSE(loaded_here(e.plugin_path));
}

TEST_F(BrokenPlugins, HangingProbeIsKilledAtTheTimeout) {
  const BackendEntry& e = entry("opencl");
  EXPECT_EQ(e.status, PluginStatus::kBroken);
  EXPECT_EQ(e.status_line(), "broken: probe hung (killed after 0.5 s)");
  expect_not_loaded(e);
  EXPECT_FALSE(loaded_here(e.plugin_path));
}

TEST_F(BrokenPlugins, UnusableCarriesThePluginsReason) {
  const BackendEntry& e = entry("sycl");
  EXPECT_EQ(e.status, PluginStatus::kUnusable);
  EXPECT_EQ(e.status_line(), "unusable: fake driver 0.9 is too old (need 1.0)");
  expect_not_loaded(e);
}

TEST_F(BrokenPlugins, MissingLibraryGivesTheDlerrorText) {
  const BackendEntry& e = entry("metal");
  EXPECT_EQ(e.status, PluginStatus::kCannotLoad);
  EXPECT_EQ(e.status_line(),
            "cannot load: libpi_test_missing_dep.so: cannot open shared object file: No such "
            "file or directory");
  expect_not_loaded(e);
}

TEST_F(BrokenPlugins, CpuStaysUsableAndLast) {
  const BackendEntry& cpu = registry_->backends().back();
  EXPECT_EQ(cpu.name, "cpu");
  EXPECT_TRUE(cpu.usable());
  EXPECT_TRUE(cpu.built_in);
  ASSERT_EQ(cpu.devices.size(), 1u);
  EXPECT_EQ(cpu.devices[0].kind, PI_DEVICE_CPU);
  EXPECT_GT(cpu.devices[0].memory_total, 0u);
  EXPECT_STRNE(cpu.devices[0].compute_version, "");
}

TEST(ProbeIsolated, ExitWithoutAnswerIsBroken) {
  const std::string dir = plugin_dir("broken_exit");
  const auto results =
      probe_isolated({{"cuda", dir + "/libpolyinfer-cuda.so"}}, test::kTestProbeTimeout);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, PluginStatus::kBroken);
  EXPECT_EQ(results[0].reason, "probe exited with status 3 without answering");
}

TEST(ProbeIsolated, ResultsFollowTheCandidatesAndCarryNoVtable) {
  const std::string dedupe = plugin_dir("dedupe"), broken = plugin_dir("broken");
  const auto results = probe_isolated({{"vulkan", dedupe + "/libpolyinfer-vulkan.so"},
                                       {"vulkan", broken + "/libpolyinfer-vulkan.so"},
                                       {"cuda", dedupe + "/libpolyinfer-cuda.so"}},
                                      test::kTestProbeTimeout);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, PluginStatus::kUsable);
  ASSERT_EQ(results[0].devices.size(), 2u);
  EXPECT_STREQ(results[0].devices[1].name, "Fake iGPU");
  EXPECT_EQ(results[1].status, PluginStatus::kBroken);
  EXPECT_EQ(results[2].status, PluginStatus::kUsable);
  ASSERT_EQ(results[2].devices.size(), 1u);
  EXPECT_STREQ(results[2].devices[0].bus_id, "00000000:65:00.0");
  for (const PluginProbe& r : results) EXPECT_EQ(r.vtable, nullptr);
}

TEST(ProbeIsolated, NameMismatchIsUnusable) {
  // The cuda fake asked for as vulkan: the vtable's own name must match the file's.
  const auto results = probe_isolated({{"vulkan", plugin_dir("order_a") + "/libpolyinfer-cuda.so"}},
                                      test::kTestProbeTimeout);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, PluginStatus::kUnusable);
  EXPECT_EQ(results[0].reason, "the plugin calls itself 'cuda', not 'vulkan'");
}

TEST(FakeGpuPlugins, UsableOnesAreLoadedWithTheirDevices) {
  const BackendRegistry reg(options_for({plugin_dir("dedupe")}));
  const BackendEntry& cuda = *reg.find("cuda");
  ASSERT_TRUE(cuda.usable()) << cuda.status_line();
  ASSERT_NE(cuda.vtable, nullptr);
  EXPECT_STREQ(cuda.vtable->name, "cuda");
  EXPECT_TRUE(loaded_here(cuda.plugin_path));
  ASSERT_EQ(cuda.devices.size(), 1u);
  EXPECT_STREQ(cuda.devices[0].name, "Fake GPU (cuda)");
  EXPECT_EQ(cuda.devices[0].kind, PI_DEVICE_GPU);
  EXPECT_EQ(cuda.devices[0].memory_total, 16ull << 30);
  EXPECT_EQ(reg.find("vulkan")->devices.size(), 2u);
  EXPECT_EQ(cuda.status_line(), "usable");
}

TEST(ProbeWire, RoundTripsAndRejectsPartialAnswers) {
  PluginProbe p;
  p.status = PluginStatus::kUnusable;
  p.reason = "no device";
  pi_device_info d{};
  std::snprintf(d.name, sizeof d.name, "dev");
  d.memory_total = 123;
  p.devices = {d, d};
  const std::string bytes = encode_probe(p);
  const auto back = decode_probe(bytes);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->status, PluginStatus::kUnusable);
  EXPECT_EQ(back->reason, "no device");
  ASSERT_EQ(back->devices.size(), 2u);
  EXPECT_STREQ(back->devices[1].name, "dev");
  EXPECT_EQ(back->devices[1].memory_total, 123u);
  EXPECT_FALSE(decode_probe(bytes.substr(0, bytes.size() - 1)).has_value());
  EXPECT_FALSE(decode_probe(bytes + "x").has_value());
  EXPECT_FALSE(decode_probe("").has_value());
}

TEST(RegistryOptions, ProbeTimeoutFromTheEnvironment) {
  setenv("POLYINFER_PROBE_TIMEOUT_MS", "250", 1);
  EXPECT_EQ(RegistryOptions::from_environment().probe_timeout, std::chrono::milliseconds(250));
  setenv("POLYINFER_PROBE_TIMEOUT_MS", "soon", 1);
  EXPECT_THROW(RegistryOptions::from_environment(), Error);
  unsetenv("POLYINFER_PROBE_TIMEOUT_MS");
  EXPECT_EQ(RegistryOptions::from_environment().probe_timeout, std::chrono::milliseconds(10000));
  EXPECT_EQ(format_seconds(std::chrono::milliseconds(10000)), "10 s");
}

}  // namespace
}  // namespace polyinfer
