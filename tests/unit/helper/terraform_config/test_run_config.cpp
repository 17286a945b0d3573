#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "helper/terraform_config/run_config.hpp"
#include "proto/registry_cache_file.hpp"
#include "scratch_dir.hpp"

namespace test_run_config {

using namespace hostkeeper::helper::terraform_config;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

ToolPaths paths_in(const fs::path& home, bool from_env) {
    ToolPaths paths;
    paths.cli_config = home / ".terraformrc";
    paths.cli_config_from_env = from_env;
    paths.config_dir = home / ".terraform.d";
    return paths;
}

bool has(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

TEST_CASE("unit: a run's configuration holds the user's files in Terraform's order") {
    const hostkeeper::test::ScratchDir scratch("hk-unit-run-config");
    const fs::path home = scratch.dir;
    write(home / ".terraformrc",
          "plugin_cache_dir = \"/cache\"\ncredentials \"Reg.Example.com\" {\n  token = \"t\"\n}\n"
          "host \"Own.Example.com\" {\n  services = {}\n}");
    write(home / ".terraform.d/b.tfrc", "provider_installation {\n  direct {}\n}\n");
    write(home / ".terraform.d/a.tfrc", "disable_checkpoint = true\n");
    write(home / ".terraform.d/hostkeeper.tfrc",
          std::string(hostkeeper::proto::kTfrcHeader) + "\nhost \"x.example.com\" {}\n");
    const RunConfig config =
        read_run_config(paths_in(home, false), {"PATH", "TF_TOKEN_tok_example_com", "TF_LOG"});
    const std::size_t main = config.user_text.find("plugin_cache_dir");
    const std::size_t a = config.user_text.find("disable_checkpoint");
    const std::size_t b = config.user_text.find("provider_installation");
    CHECK(main < a);
    CHECK(a < b);
    CHECK(b != std::string::npos);
    CHECK(config.user_text.find("x.example.com") == std::string::npos);  // hostkeeperd's own file
    CHECK(config.kept_hosts == std::vector<std::string>{"own.example.com"});
    CHECK(has(config.hosts, "reg.example.com"));
    CHECK(has(config.hosts, "tok.example.com"));
    CHECK(has(config.hosts, "registry.terraform.io"));
    CHECK(config.files.size() == 3);
    const std::string blocks = "host \"r.example\" {}\n";
    const std::string text = run_config_text(config, blocks);
    CHECK(text.rfind(config.user_text, 0) == 0);
    CHECK(text.find(blocks) == text.size() - blocks.size());
}

TEST_CASE("unit: a run's configuration keeps credentials blocks' tokens out of its text") {
    const hostkeeper::test::ScratchDir scratch("hk-unit-run-config");
    const fs::path home = scratch.dir;
    write(home / ".terraformrc",
          "credentials \"A.example.com\" {\n  token = \"secret-main\"\n}\n"
          "credentials \"b.example.com\" {\n  token = \"secret-b-main\"\n}\n"
          "credentials \"notoken.example.com\" {\n}\nplugin_cache_dir = \"/cache\"\n");
    write(home / ".terraform.d/z.tfrc",
          "credentials \"b.example.com\" { token = \"secret-b-dir\" }\n");
    write(
        home / ".terraform.d/credentials.tfrc.json",
        R"({"credentials": {"c.example.com": {"token": "secret-json"}, "bad host": {"token": "x"}}})");
    const RunConfig config = read_run_config(paths_in(home, false), {});
    CHECK(config.user_text.find("secret") == std::string::npos);
    CHECK(config.user_text.find("# credentials \"a.example.com\": its token is passed") !=
          std::string::npos);
    CHECK(config.user_text.find("credentials \"notoken.example.com\" {") != std::string::npos);
    // The lines after a block that was taken out stay where they were.
    const std::size_t cache = config.user_text.find("plugin_cache_dir");
    REQUIRE(cache != std::string::npos);
    CHECK(std::count(config.user_text.begin(),
                     config.user_text.begin() + static_cast<std::ptrdiff_t>(cache), '\n') == 9);
    REQUIRE(config.tokens.size() == 3);
    CHECK(config.tokens.at("a.example.com").view() == "secret-main");
    CHECK(config.tokens.at("b.example.com").view() == "secret-b-dir");  // a later file wins
    CHECK(config.tokens.at("c.example.com").view() == "secret-json");
    CHECK(has(config.hosts, "c.example.com"));
    CHECK(!has(config.hosts, "notoken.example.com"));
}

TEST_CASE("unit: a run's configuration named by TF_CLI_CONFIG_FILE reads that file alone") {
    const hostkeeper::test::ScratchDir scratch("hk-unit-run-config");
    write(scratch.dir / ".terraformrc", "disable_checkpoint = true\n");
    write(scratch.dir / ".terraform.d/a.tfrc", "plugin_cache_dir = \"/x\"\n");
    write(scratch.dir / ".terraform.d/c.tfrc.json", "{}");  // not read: the file is named
    const RunConfig config = read_run_config(paths_in(scratch.dir, true), {});
    CHECK(config.files.size() == 1);
    CHECK(config.user_text.find("plugin_cache_dir") == std::string::npos);
}

TEST_CASE("unit: a run joins OpenTofu's configuration for tofu, or where only OpenTofu is") {
    CHECK(run_tool("tofu", true, true) == Tool::opentofu);
    CHECK(run_tool("/usr/local/bin/tofu", true, false) == Tool::opentofu);
    CHECK(run_tool("terraform", false, true) == Tool::terraform);
    CHECK(run_tool("bash", false, true) == Tool::opentofu);
    CHECK(run_tool("bash", true, true) == Tool::terraform);
    CHECK(run_tool("make", false, false) == Tool::terraform);
}

TEST_CASE("unit: a run refuses a configuration it cannot join, naming the file") {
    const hostkeeper::test::ScratchDir scratch("hk-unit-run-config");
    SECTION("a JSON file in the configuration directory with more than credentials") {
        write(scratch.dir / ".terraform.d/c.tfrc.json",
              R"({"credentials": {}, "plugin_cache_dir": "/x"})");
        REQUIRE_THROWS_WITH(read_run_config(paths_in(scratch.dir, false), {}),
                            Catch::Contains("c.tfrc.json") && Catch::Contains("HCL"));
    }
    SECTION("a JSON file that does not parse") {
        write(scratch.dir / ".terraform.d/credentials.tfrc.json", R"({"credentials": {)");
        REQUIRE_THROWS_WITH(read_run_config(paths_in(scratch.dir, false), {}),
                            Catch::Contains("credentials.tfrc.json"));
    }
    SECTION("an unterminated string") {
        write(scratch.dir / ".terraformrc", "a = 1\nb = \"open\n");
        REQUIRE_THROWS_WITH(read_run_config(paths_in(scratch.dir, false), {}),
                            Catch::Contains(".terraformrc") && Catch::Contains("line"));
    }
    SECTION("a host block that names no hostname") {
        write(scratch.dir / ".terraformrc", "\n\nhost \"not a host\" {\n}\n");
        REQUIRE_THROWS_WITH(read_run_config(paths_in(scratch.dir, false), {}),
                            Catch::Contains(".terraformrc:3"));
    }
}

}  // namespace test_run_config
