// Where plugins are looked for, in which order, and which file names count as plugins.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "registry/backend_registry.hpp"
#include "registry/known_backends.hpp"
#include "registry/plugin_search.hpp"
#include "registry_test_util.hpp"

namespace polyinfer {
namespace {

namespace fs = std::filesystem;
using test::options_for;
using test::plugin_dir;

std::string device_name(const BackendRegistry& reg, const char* backend) {
  const BackendEntry* e = reg.find(backend);
  if (e == nullptr || !e->usable() || e->devices.empty()) return "(none)";
  return e->devices[0].name;
}

TEST(PluginSearchPath, EnvironmentThenExecutableDirThenInstallLibDir) {
  const std::string cwd = fs::current_path().string();
  EXPECT_EQ(plugin_search_path("/p1::rel/dir/:/p2", "/opt/pi/bin/polyinfer"),
            (std::vector<std::string>{"/p1", cwd + "/rel/dir", "/p2", "/opt/pi/bin",
                                      "/opt/pi/lib/polyinfer"}));
  EXPECT_EQ(plugin_search_path("", "/opt/pi/bin/polyinfer"),
            (std::vector<std::string>{"/opt/pi/bin", "/opt/pi/lib/polyinfer"}));
  // A directory named twice is searched once, where it first appears.
  EXPECT_EQ(plugin_search_path("/opt/pi/lib/polyinfer/:/p1:/p1", "/opt/pi/bin/polyinfer"),
            (std::vector<std::string>{"/opt/pi/lib/polyinfer", "/p1", "/opt/pi/bin"}));
  EXPECT_EQ(plugin_search_path("/p1", ""), (std::vector<std::string>{"/p1"}));
}

TEST(PluginSearchPath, CurrentExecutableIsThisTest) {
  EXPECT_EQ(fs::path(current_executable()).filename(), "test_registry");
}

TEST(FindPlugins, FirstDirectoryWins) {
  const std::string a = plugin_dir("order_a"), b = plugin_dir("order_b");
  EXPECT_EQ(device_name(BackendRegistry(options_for({b, a})), "cuda"), "Fake GPU B");
  EXPECT_EQ(device_name(BackendRegistry(options_for({a, b})), "cuda"), "Fake GPU A");
  const auto found = find_plugins({b, a});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].path, b + "/libpolyinfer-cuda.so");
}

TEST(FindPlugins, InstallTreeOrder) {
  // prefix/bin plays the executable's directory: its cuda beats lib/polyinfer's, vulkan is
  // only in lib/polyinfer, and POLYINFER_BACKEND_PATH beats both.
  const std::string exe = plugin_dir("prefix") + "/bin/polyinfer";
  const BackendRegistry installed(options_for(plugin_search_path("", exe)));
  EXPECT_EQ(device_name(installed, "cuda"), "Fake GPU (bin)");
  EXPECT_EQ(device_name(installed, "vulkan"), "Fake GPU (lib vulkan)");
  EXPECT_EQ(installed.find("vulkan")->plugin_path,
            plugin_dir("prefix") + "/lib/polyinfer/libpolyinfer-vulkan.so");
  const BackendRegistry env_first(options_for(plugin_search_path(plugin_dir("order_a"), exe)));
  EXPECT_EQ(device_name(env_first, "cuda"), "Fake GPU A");
  EXPECT_EQ(device_name(env_first, "vulkan"), "Fake GPU (lib vulkan)");
}

TEST(FindPlugins, OnlyLibpolyinferNameDotSoFilesCount) {
  const fs::path dir = fs::temp_directory_path() / ("pi_search_" + std::to_string(getpid()));
  fs::create_directories(dir / "libpolyinfer-dir.so");
  for (const char* f : {"libpolyinfer-.so", "libpolyinfer-Cuda.so", "libpolyinfer-cuda.so.1",
                        "polyinfer-cuda.so", "libpolyinfer-cuda.dll", "libpolyinfer-my gpu.so"}) {
    std::ofstream(dir / f) << "x";
  }
  std::ofstream(dir / "libpolyinfer-my_gpu-2.so") << "x";
  const auto found = find_plugins({dir.string(), "/nonexistent/dir"});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "my_gpu-2");
  fs::remove_all(dir);
}

TEST(Registry, KnownBackendsInDefaultOrderThenOthersThenCpu) {
  const BackendRegistry reg(options_for({plugin_dir("extra")}, {"vulkan"}));
  std::vector<std::string> names;
  for (const BackendEntry& e : reg.backends()) {
    names.push_back(e.name);
    EXPECT_EQ(e.rank, static_cast<int>(names.size()));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cuda", "hip", "vulkan", "opencl", "sycl", "metal",
                                             "fakedev", "cpu"}));
  const BackendEntry& extra = *reg.find("fakedev");
  EXPECT_FALSE(extra.known);
  EXPECT_FALSE(extra.compiled);
  EXPECT_TRUE(extra.usable()) << extra.status_line();
  EXPECT_TRUE(reg.find("vulkan")->compiled);
  EXPECT_FALSE(reg.find("cuda")->compiled);
  EXPECT_EQ(reg.find("hip")->status_line(), "not found (searched: " + plugin_dir("extra") + ")");
}

TEST(Registry, CompiledListComesFromTheBuild) {
  // cmake/Backends.cmake decides; whatever it decided must be known names, never cpu.
  for (const std::string& name : compiled_gpu_backends()) {
    EXPECT_TRUE(is_known_backend(name)) << name;
    EXPECT_NE(name, "cpu");
  }
  EXPECT_EQ(RegistryOptions::from_environment().compiled, compiled_gpu_backends());
}

}  // namespace
}  // namespace polyinfer
