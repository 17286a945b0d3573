#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "helper/terraform_config/tool_locations.hpp"

namespace test_tool_locations {

using namespace hostkeeper::helper::terraform_config;
namespace fs = std::filesystem;

namespace {

struct World {
    World() {
        char pattern[] = "/tmp/hk-unit-tools.XXXXXX";
        root = ::mkdtemp(pattern);
        fs::create_directories(root / "home");
        env["HOME"] = (root / "home").string();
        env["PATH"] = (root / "bin").string();
    }
    ~World() { fs::remove_all(root); }
    hostkeeper::proto::EnvLookup lookup() const {
        return [this](const char* name) -> const char* {
            const auto it = env.find(name);
            return it == env.end() ? nullptr : it->second.c_str();
        };
    }
    void touch(const fs::path& path) const {
        fs::create_directories(path.parent_path());
        std::ofstream(path) << "";
    }
    fs::path root;
    std::map<std::string, std::string> env;
};

}  // namespace

TEST_CASE("Terraform reads TF_CLI_CONFIG_FILE, else ~/.terraformrc", "[helper][tool_locations]") {
    World w;
    const fs::path home = w.root / "home";
    auto paths = locate(Tool::terraform, w.lookup());
    CHECK(paths.cli_config == home / ".terraformrc");
    CHECK_FALSE(paths.cli_config_from_env);
    CHECK(paths.plugin_dirs == std::vector<fs::path>{home / ".terraform.d" / "plugins"});
    CHECK(paths.credentials_json == home / ".terraform.d" / "credentials.tfrc.json");
    CHECK_FALSE(tool_present(paths, w.lookup()));

    w.env["TF_CLI_CONFIG_FILE"] = (w.root / "custom.tfrc").string();
    paths = locate(Tool::terraform, w.lookup());
    CHECK(paths.cli_config == w.root / "custom.tfrc");
    CHECK(paths.cli_config_from_env);
}

TEST_CASE("OpenTofu: ~/.tofurc, else ~/.terraformrc, else the XDG file",
          "[helper][tool_locations]") {
    World w;
    const fs::path home = w.root / "home";
    w.env["XDG_CONFIG_HOME"] = (w.root / "config").string();
    w.env["XDG_DATA_HOME"] = (w.root / "data").string();
    auto paths = locate(Tool::opentofu, w.lookup());
    CHECK(paths.cli_config == w.root / "config" / "opentofu" / "tofurc");
    CHECK(paths.config_dir == w.root / "config" / "opentofu");
    CHECK(paths.plugin_dirs == std::vector<fs::path>{w.root / "data" / "opentofu" / "plugins"});

    w.touch(home / ".terraformrc");
    CHECK(locate(Tool::opentofu, w.lookup()).cli_config == home / ".terraformrc");
    w.touch(home / ".tofurc");
    CHECK(locate(Tool::opentofu, w.lookup()).cli_config == home / ".tofurc");
    CHECK(tool_present(locate(Tool::opentofu, w.lookup()), w.lookup()));

    // Without XDG_CONFIG_HOME and with neither file, ~/.tofurc (to be created).
    World bare;
    CHECK(locate(Tool::opentofu, bare.lookup()).cli_config == bare.root / "home" / ".tofurc");

    // Once ~/.terraform.d exists, OpenTofu uses it instead of the XDG directories.
    fs::create_directories(home / ".terraform.d");
    paths = locate(Tool::opentofu, w.lookup());
    CHECK(paths.config_dir == home / ".terraform.d");
    CHECK(paths.plugin_dirs == std::vector<fs::path>{home / ".terraform.d" / "plugins"});
}

TEST_CASE("a tool on PATH is present", "[helper][tool_locations]") {
    World w;
    w.touch(w.root / "bin" / "tofu");
    fs::permissions(w.root / "bin" / "tofu", fs::perms::owner_all);
    CHECK(tool_present(locate(Tool::opentofu, w.lookup()), w.lookup()));
    CHECK_FALSE(tool_present(locate(Tool::terraform, w.lookup()), w.lookup()));
    // ~/.terraform.d counts for Terraform only.
    fs::create_directories(w.root / "home" / ".terraform.d");
    CHECK(tool_present(locate(Tool::terraform, w.lookup()), w.lookup()));
}

// credentials.tfrc.json (plaintext_credentials): tests live here because this
// file already links the helper's file handling into the unit tests.

}  // namespace test_tool_locations
