// Selection rules: command line > environment > config file > default, for backend, priority
// and devices; explicit requests that cannot be honoured fail listing what is available;
// one GPU seen through two backends counts once in auto.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "polyinfer/error.hpp"
#include "registry/physical_id.hpp"
#include "registry/selection.hpp"
#include "registry_test_util.hpp"

namespace polyinfer {
namespace {

using test::options_for;
using test::plugin_dir;

constexpr const char* kConfig = "/home/u/.config/polyinfer/config.json";

std::vector<std::string> picked(const Selection& s) {
  std::vector<std::string> out;
  for (const SelectedDevice& d : s.devices) out.push_back(d.text());
  return out;
}

using Devices = std::vector<std::string>;

bool has_reason(const Selection& s, const std::string& text) {
  for (const std::string& r : s.reasons) {
    if (r == text) return true;
  }
  return false;
}

// The error message select_devices throws, or "" when it does not throw.
std::string error_of(const BackendRegistry& reg, const SelectionRequest& r, ErrorCode code) {
  try {
    select_devices(reg, r);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "select_devices did not throw";
  return "";
}

// cuda:0 and vulkan:0 are one GPU (bus ids written two ways); vulkan:1 is an integrated GPU.
class Selecting : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dedupe_ = std::make_unique<BackendRegistry>(options_for({plugin_dir("dedupe")}, {"cuda"}));
  }
  static void TearDownTestSuite() { dedupe_.reset(); }

  void SetUp() override {
    request_.config.path = kConfig;
    request_.config.choice.config_path = kConfig;
  }
  Selection select() const { return select_devices(*dedupe_, request_); }
  SelectionLayer& cli() { return request_.command_line; }
  SelectionLayer& env() { return request_.environment; }
  SelectionLayer& config() { return request_.config.choice; }

  static std::unique_ptr<BackendRegistry> dedupe_;
  SelectionRequest request_;
};
std::unique_ptr<BackendRegistry> Selecting::dedupe_;

TEST_F(Selecting, DefaultAutoTakesTheSharedGpuThroughCudaOnce) {
  const Selection s = select();
  EXPECT_EQ(picked(s), (Devices{"cuda:0", "cpu:0"}));
  EXPECT_EQ(s.priority, (Devices{"cuda", "hip", "vulkan", "opencl", "sycl", "metal", "cpu"}));
  EXPECT_EQ(s.reasons.front(), "auto, priority cuda,hip,vulkan,opencl,sycl,metal,cpu (default)");
  EXPECT_TRUE(has_reason(s,
                         "vulkan:0 (Fake GPU (vulkan)) passed over: the same GPU as cuda:0 "
                         "(pci:0000:65:00.0)"));
  EXPECT_TRUE(has_reason(s,
                         "vulkan:1 (Fake iGPU) passed over: not a discrete GPU, and a "
                         "discrete GPU is selected"));
  EXPECT_EQ(s.devices[0].vtable, dedupe_->find("cuda")->vtable);
  EXPECT_STREQ(s.devices[0].info.name, "Fake GPU (cuda)");
  EXPECT_EQ(s.devices[1].vtable, dedupe_->find("cpu")->vtable);
}

TEST_F(Selecting, PriorityPutsVulkanFirstAndCudaIsTheDuplicate) {
  cli().priority = {"vulkan"};
  const Selection s = select();
  EXPECT_EQ(picked(s), (Devices{"vulkan:0", "cpu:0"}));
  EXPECT_EQ(s.priority, (Devices{"vulkan", "cuda", "hip", "opencl", "sycl", "metal", "cpu"}));
  EXPECT_TRUE(has_reason(
      s, "cuda:0 (Fake GPU (cuda)) passed over: the same GPU as vulkan:0 (pci:0000:65:00.0)"));
}

TEST_F(Selecting, NamingADeviceReachesItDespiteDedupe) {
  cli().devices = {{"vulkan", 0}};
  EXPECT_EQ(picked(select()), (Devices{"vulkan:0", "cpu:0"}));
  cli().devices = {{"vulkan", 1}, {"cuda", 0}, {"cpu", 0}};
  EXPECT_EQ(picked(select()), (Devices{"vulkan:1", "cuda:0", "cpu:0"}));
  cli().devices = {{"cpu", 0}, {"cuda", 0}};  // the CPU goes last even when named first
  EXPECT_EQ(picked(select()), (Devices{"cuda:0", "cpu:0"}));
}

TEST_F(Selecting, BackendPrecedence) {
  config().backend = "vulkan";
  EXPECT_EQ(picked(select()), (Devices{"vulkan:0", "vulkan:1", "cpu:0"}));
  EXPECT_EQ(select().reasons.front(), std::string("backend vulkan from ") + kConfig + ": backend");
  config().backend = "cuda";
  env().backend = "vulkan";
  EXPECT_EQ(picked(select()), (Devices{"vulkan:0", "vulkan:1", "cpu:0"}));
  EXPECT_EQ(select().reasons.front(), "backend vulkan from POLYINFER_BACKEND");
  cli().backend = "cpu";
  EXPECT_EQ(picked(select()), (Devices{"cpu:0"}));
  EXPECT_EQ(select().reasons.front(), "backend cpu from --backend");
}

TEST_F(Selecting, PriorityPrecedence) {
  config().priority = {"vulkan"};
  EXPECT_EQ(picked(select()), (Devices{"vulkan:0", "cpu:0"}));
  env().priority = {"cuda"};
  EXPECT_EQ(picked(select()), (Devices{"cuda:0", "cpu:0"}));
  EXPECT_EQ(select().reasons.front(),
            "auto, priority cuda,hip,vulkan,opencl,sycl,metal,cpu (from POLYINFER_PRIORITY)");
  cli().priority = {"vulkan", "cuda"};
  EXPECT_EQ(picked(select()), (Devices{"vulkan:0", "cpu:0"}));
  EXPECT_EQ(select().reasons.front(),
            "auto, priority vulkan,cuda,hip,opencl,sycl,metal,cpu (from --priority)");
}

TEST_F(Selecting, DevicesPrecedence) {
  config().devices = {{"vulkan", 1}};
  EXPECT_EQ(picked(select()), (Devices{"vulkan:1", "cpu:0"}));
  env().devices = {{"vulkan", 0}};
  EXPECT_EQ(picked(select()), (Devices{"vulkan:0", "cpu:0"}));
  cli().devices = {{"cuda", 0}};
  EXPECT_EQ(picked(select()), (Devices{"cuda:0", "cpu:0"}));
  EXPECT_EQ(select().reasons.front(), "devices from --device");
}

TEST_F(Selecting, AMoreSpecificSourceOverridesAnyChoiceOfALessSpecificOne) {
  env().devices = {{"vulkan", 1}};
  cli().backend = "auto";  // back to auto despite the environment's devices
  EXPECT_EQ(picked(select()), (Devices{"cuda:0", "cpu:0"}));
  EXPECT_EQ(select().reasons.front(),
            "auto from --backend, priority cuda,hip,vulkan,opencl,sycl,metal,cpu (default)");
  cli().backend.reset();
  cli().priority = {"vulkan"};  // a priority does not undo an explicit choice
  EXPECT_EQ(picked(select()), (Devices{"vulkan:1", "cpu:0"}));
  config().backend = "cpu";  // a less specific choice loses to the environment's devices
  EXPECT_EQ(picked(select()), (Devices{"vulkan:1", "cpu:0"}));
}

TEST_F(Selecting, DevicesAndBackendInOneSourceMustAgree) {
  cli().backend = "cuda";
  cli().devices = {{"cuda", 0}};
  EXPECT_EQ(picked(select()), (Devices{"cuda:0", "cpu:0"}));
  cli().devices = {{"vulkan", 0}};
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kInvalidArgument),
            "--device: vulkan:0 is not a device of --backend cuda");
}

TEST_F(Selecting, CpuEndsThePriorityList) {
  cli().priority = {"cpu"};
  EXPECT_EQ(picked(select()), (Devices{"cpu:0"}));
  EXPECT_EQ(select().priority, (Devices{"cpu"}));
  cli().priority = {"vulkan", "cpu", "cuda"};
  const Selection s = select();
  EXPECT_EQ(picked(s), (Devices{"vulkan:0", "cpu:0"}));
  EXPECT_EQ(s.priority, (Devices{"vulkan", "cpu"}));
}

TEST_F(Selecting, DisabledBackendsAreSkippedByAutoOnly) {
  request_.config.disabled = {"cuda"};
  Selection s = select();
  EXPECT_EQ(picked(s), (Devices{"vulkan:0", "cpu:0"}));
  EXPECT_TRUE(has_reason(s, std::string("cuda: disabled by ") + kConfig));
  cli().backend = "cuda";
  EXPECT_EQ(picked(select()), (Devices{"cuda:0", "cpu:0"}));
  request_.config.disabled = {"cpu"};
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kInvalidArgument),
            std::string(kConfig) +
                ": disabled: the CPU backend cannot be disabled (it runs what the others cannot)");
}

TEST_F(Selecting, ConfigOptionsReachTheirDevices) {
  request_.config.options = {{"cpu", "threads=3"}, {"cuda", "streams=2"}};
  const Selection s = select();
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].options, "streams=2");
  EXPECT_EQ(s.devices[1].options, "threads=3");
  request_.config.options = {{"cdua", "x=1"}};
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kInvalidArgument),
            std::string(kConfig) +
                ": options: no backend is named 'cdua' (known: cuda, hip, "
                "vulkan, opencl, sycl, metal, cpu)");
}

// What the errors offer instead.
constexpr const char* kAvailable =
    "available: cuda:0 (Fake GPU (cuda)), vulkan:0 (Fake GPU (vulkan)), vulkan:1 (Fake iGPU), "
    "cpu:0 (";

TEST_F(Selecting, UnavailableBackendFailsListingWhatIsAvailable) {
  cli().backend = "hip";
  const std::string e = error_of(*dedupe_, request_, ErrorCode::kUnsupported);
  EXPECT_EQ(e.rfind("--backend: hip is not usable (not compiled into this build: see "
                    "docs/BUILD_BACKENDS.md): not found (searched: " +
                        plugin_dir("dedupe") + "); " + kAvailable,
                    0),
            0u)
      << e;
}

TEST_F(Selecting, EachSourceIsNamedInItsErrors) {
  env().backend = "sycl";
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kUnsupported)
                .rfind("POLYINFER_BACKEND: sycl is not usable", 0),
            0u);
  env().backend.reset();
  config().devices = {{"cuda", 2}};
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kUnsupported)
                .rfind(std::string(kConfig) + ": devices cuda:2: cuda has 1 device(s), 0..0; " +
                           kAvailable,
                       0),
            0u);
}

TEST_F(Selecting, BadNamesAndRepeatsAreErrors) {
  cli().backend = "nosuch";
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kInvalidArgument),
            "--backend: no backend is named 'nosuch' (known: cuda, hip, vulkan, opencl, sycl, "
            "metal, cpu)");
  cli().backend.reset();
  cli().devices = {{"cuda", 0}, {"cuda", 0}};
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kInvalidArgument),
            "--device: cuda:0 is named twice");
  cli().devices.reset();
  cli().priority = {"vulkan", "vulkan"};
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kInvalidArgument),
            "--priority: vulkan is named twice");
  cli().priority = {"opengl"};
  EXPECT_EQ(error_of(*dedupe_, request_, ErrorCode::kInvalidArgument)
                .rfind("--priority: no backend is named 'opengl'", 0),
            0u);
}

TEST(SelectingBroken, ABrokenBackendNamedExplicitlyFailsWithItsStatus) {
  const BackendRegistry reg(options_for({plugin_dir("broken")}));
  SelectionRequest r;
  r.command_line.backend = "vulkan";
  EXPECT_EQ(error_of(reg, r, ErrorCode::kUnsupported)
                .rfind("--backend: vulkan is not usable (not compiled into this build: see "
                       "docs/BUILD_BACKENDS.md): broken: probe crashed (signal 11); available: "
                       "cpu:0 (",
                       0),
            0u);
  r.command_line.backend.reset();
  const Selection s = select_devices(reg, r);  // auto still works, on the CPU
  EXPECT_EQ(picked(s), (Devices{"cpu:0"}));
  EXPECT_TRUE(has_reason(s, "opencl: broken: probe hung (killed after 0.5 s)"));
  EXPECT_TRUE(has_reason(s, "no accelerator selected: the CPU runs it all"));
}

TEST(SelectingUuid, SameUuidWithoutBusIdCountsOnce) {
  const BackendRegistry reg(options_for({plugin_dir("dedupe_uuid")}));
  SelectionRequest r;
  const Selection s = select_devices(reg, r);
  EXPECT_EQ(picked(s), (Devices{"hip:0", "cpu:0"}));
  EXPECT_TRUE(has_reason(s,
                         "opencl:0 (Fake GPU (opencl)) passed over: the same GPU as hip:0 "
                         "(uuid:42424242424242424242424242424242)"));
}

TEST(SelectingNothing, NoPluginsMeansTheCpuAlone) {
  const BackendRegistry reg(options_for({}));
  const Selection s = select_devices(reg, SelectionRequest{});
  EXPECT_EQ(picked(s), (Devices{"cpu:0"}));
  SelectionRequest r;
  r.command_line.backend = "cuda";
  EXPECT_NE(error_of(reg, r, ErrorCode::kUnsupported).find("cuda is not usable"),
            std::string::npos);
}

TEST(PhysicalId, BusIdsNormalizeAndUuidIsTheFallback) {
  pi_device_info d{};
  for (const char* bus : {"00000000:65:00.0", "0000:65:00.0", "65:00.0", "0000:65:00.0"}) {
    std::snprintf(d.bus_id, sizeof d.bus_id, "%s", bus);
    EXPECT_EQ(physical_device_id(d), "pci:0000:65:00.0") << bus;
  }
  std::snprintf(d.bus_id, sizeof d.bus_id, "0001:0A:1f.7");
  EXPECT_EQ(physical_device_id(d), "pci:0001:0a:1f.7");
  std::snprintf(d.bus_id, sizeof d.bus_id, "not a bus id");
  EXPECT_EQ(physical_device_id(d), "");
  d.uuid[15] = 0xab;
  EXPECT_EQ(physical_device_id(d), "uuid:000000000000000000000000000000ab");
}

TEST(DeviceLists, ParseAndReject) {
  EXPECT_EQ(parse_device_list("CUDA:1, vulkan:0", "--device"),
            (std::vector<DeviceRef>{{"cuda", 1}, {"vulkan", 0}}));
  EXPECT_EQ(parse_name_list("Vulkan,cuda", "--priority"), (Devices{"vulkan", "cuda"}));
  for (const char* bad : {"cuda", "cuda:", ":0", "cuda:-1", "cuda:x", "cuda:1x", ""}) {
    EXPECT_THROW(parse_device_list(bad, "--device"), Error) << bad;
  }
  try {
    parse_device_list("cuda:0,,vulkan:0", "POLYINFER_DEVICES");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "POLYINFER_DEVICES: empty item in 'cuda:0,,vulkan:0' (expected a "
                 "comma-separated list)");
  }
  try {
    parse_device_ref("gpu", "--device");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--device: 'gpu' is not NAME:INDEX (e.g. cuda:0)");
  }
}

TEST(EnvironmentLayer, ReadsTheThreeVariables) {
  setenv("POLYINFER_BACKEND", "Vulkan", 1);
  setenv("POLYINFER_PRIORITY", "vulkan,cuda", 1);
  setenv("POLYINFER_DEVICES", "cuda:1", 1);
  const SelectionLayer l = selection_from_environment();
  EXPECT_EQ(l.source, SelectionSource::kEnvironment);
  EXPECT_EQ(l.backend, "vulkan");
  EXPECT_EQ(l.priority, (Devices{"vulkan", "cuda"}));
  EXPECT_EQ(l.devices, (std::vector<DeviceRef>{{"cuda", 1}}));
  setenv("POLYINFER_DEVICES", "", 1);
  unsetenv("POLYINFER_BACKEND");
  unsetenv("POLYINFER_PRIORITY");
  const SelectionLayer empty = selection_from_environment();
  EXPECT_FALSE(empty.backend || empty.priority || empty.devices);
  unsetenv("POLYINFER_DEVICES");
}

}  // namespace
}  // namespace polyinfer
