// The config file: where it is, what it may say, and one-line errors naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "polyinfer/error.hpp"
#include "registry/config_file.hpp"

namespace polyinfer {
namespace {

namespace fs = std::filesystem;

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pi_config_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "config.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& text) const { std::ofstream(path_) << text; }

  // The one-line message load_config throws for the file as written.
  std::string error_for(const std::string& text) const {
    write(text);
    try {
      load_config(path_);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error for: " << text;
    return "";
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(ConfigFileTest, ReadsEveryKey) {
  write(R"({"backend": "Vulkan", "priority": ["vulkan", "cuda"], "devices": ["cuda:1"],
            "disabled": ["opencl"], "options": {"cpu": "threads=8", "CUDA": "streams=2"}})");
  const ConfigFile c = load_config(path_);
  EXPECT_EQ(c.path, path_);
  EXPECT_EQ(c.choice.source, SelectionSource::kConfigFile);
  EXPECT_EQ(c.choice.label("backend"), path_ + ": backend");
  EXPECT_EQ(c.choice.backend, "vulkan");
  EXPECT_EQ(c.choice.priority, (std::vector<std::string>{"vulkan", "cuda"}));
  EXPECT_EQ(c.choice.devices, (std::vector<DeviceRef>{{"cuda", 1}}));
  EXPECT_EQ(c.disabled, (std::vector<std::string>{"opencl"}));
  EXPECT_EQ(c.options,
            (std::map<std::string, std::string>{{"cpu", "threads=8"}, {"cuda", "streams=2"}}));
}

TEST_F(ConfigFileTest, MissingFileIsNoConfig) {
  const ConfigFile c = load_config(path_);
  EXPECT_EQ(c.path, "");
  EXPECT_FALSE(c.choice.backend || c.choice.priority || c.choice.devices);
  EXPECT_TRUE(c.disabled.empty() && c.options.empty());
  write("{}");
  EXPECT_EQ(load_config(path_).path, path_);
}

TEST_F(ConfigFileTest, MalformedJsonNamesTheFileAndTheParserError) {
  const std::string e = error_for("{\n  \"backend\": \"cuda\",\n}\n");
  EXPECT_EQ(
      e.rfind(path_ + ": [json.exception.parse_error.101] parse error at line 3, column 1", 0), 0u)
      << e;
}

// Found by fuzz_cli_parsers: nlohmann-json throws out_of_range, not parse_error, here.
TEST_F(ConfigFileTest, NumberBeyondDoubleRangeIsAnError) {
  EXPECT_NE(error_for("1e50111010").find(path_), std::string::npos);
  EXPECT_NE(error_for("{\"priority\": [1e999]}").find(path_), std::string::npos);
}

TEST_F(ConfigFileTest, WrongShapesAreErrors) {
  EXPECT_EQ(error_for("[1]"), path_ + ": the top level must be a JSON object");
  EXPECT_EQ(
      error_for(R"({"backnd": "cuda"})"),
      path_ + ": unknown key 'backnd' (known: backend, priority, devices, disabled, options)");
  EXPECT_EQ(error_for(R"({"backend": 1})"), path_ + ": 'backend' must be a string");
  EXPECT_EQ(error_for(R"({"priority": "cuda"})"),
            path_ + ": 'priority' must be an array of strings");
  EXPECT_EQ(error_for(R"({"disabled": ["cuda", 2]})"),
            path_ + ": 'disabled' must be an array of strings, not 2");
  EXPECT_EQ(error_for(R"({"options": {"cpu": 8}})"),
            path_ + ": 'options.cpu' must be a string like \"threads=8\"");
  EXPECT_EQ(error_for(R"({"devices": ["cuda"]})"),
            path_ + ": devices: 'cuda' is not NAME:INDEX (e.g. cuda:0)");
}

TEST(ConfigPath, XdgConfigHomeThenHome) {
  const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string saved = old_xdg ? old_xdg : "";
  setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
  EXPECT_EQ(default_config_path(), "/x/cfg/polyinfer/config.json");
  setenv("XDG_CONFIG_HOME", "", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_config_path(), "/home/u/.config/polyinfer/config.json");
  if (old_xdg) {
    setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
  } else {
    unsetenv("XDG_CONFIG_HOME");
  }
}

}  // namespace
}  // namespace polyinfer
