// [hosts."HOST"] token_command, token_ttl, token_command_timeout,
// token_username, and the
// refusal of commands from a config.toml another user may write.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/app/config.hpp"
#include "daemon/credentials/file_trust.hpp"

namespace test_token_command_config {

using namespace hostkeeper::daemon::app;
using hostkeeper::daemon::credentials::writable_by_others;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct ConfigFile {
    explicit ConfigFile(const std::string& text, fs::perms mode = fs::perms(0600)) {
        char pattern[] = "/tmp/hk-unit.XXXXXX";
        dir = ::mkdtemp(pattern);
        path = dir / "config.toml";
        std::ofstream(path) << text;
        fs::permissions(path, mode);
    }
    ConfigFile(const ConfigFile&) = delete;
    ConfigFile& operator=(const ConfigFile&) = delete;
    ~ConfigFile() { fs::remove_all(dir); }
    fs::path dir;
    fs::path path;
};

Config parse_file(const ConfigFile& file) {
    std::string program = "hostkeeperd";
    std::string option = "--config";
    std::string path = file.path.string();
    std::vector<char*> argv{program.data(), option.data(), path.data()};
    return *parse_args(static_cast<int>(argv.size()), argv.data()).config;
}

std::string error_of(const std::string& text) {
    const ConfigFile file(text);
    try {
        parse_file(file);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(accepted)";
}

const std::string kHost = "[hosts.\"Registry.Example\"]\n";

}  // namespace

TEST_CASE("token_command: an argv with its ttl and timeout, by normalized host",
          "[daemon][config]") {
    const ConfigFile file(
        kHost +
        "token_command = [\"aws\", \"codeartifact\", \"get-authorization-token\"]\n"
        "token_ttl = \"11h\"\ntoken_command_timeout = 30\n"
        "[hosts.\"other.example\"]\ntoken_command = [\"/bin/tok\"]\n");
    const Config config = parse_file(file);
    const auto& hosts = config.token_commands.hosts;
    REQUIRE(hosts.size() == 2);
    const auto& aws = hosts.at("registry.example");
    CHECK(aws.argv == std::vector<std::string>{"aws", "codeartifact", "get-authorization-token"});
    CHECK(aws.ttl == 11h);
    CHECK(aws.timeout == 30s);
    CHECK(hosts.at("other.example").ttl == 10min);
    CHECK(hosts.at("other.example").timeout == 60s);
    CHECK(aws.username.empty());
    CHECK(config.token_commands.refused.empty());
    CHECK(config.warnings.empty());
}

TEST_CASE("token_username: the user name a registry expects with the token, beside the command",
          "[daemon][config]") {
    const ConfigFile file(
        "[hosts.\"127.0.0.1:5000\"]\ntoken_command = [\"aws\", \"ecr\", "
        "\"get-login-password\"]\ntoken_username = \"AWS\"\n");
    const Config config = parse_file(file);
    REQUIRE(config.token_commands.hosts.count("127.0.0.1:5000") == 1);
    CHECK(config.token_commands.hosts.at("127.0.0.1:5000").username == "AWS");
    CHECK_THAT(error_of(kHost + "token_username = \"AWS\"\n"),
               Catch::Contains("token_username needs a token_command"));
    CHECK_THAT(error_of(kHost + "token_command = [\"a\"]\ntoken_username = \"\"\n"),
               Catch::Contains("token_username must be a string, not empty"));
    CHECK_THAT(
        error_of(kHost + "token_command = [\"a\"]\ntoken_username = \"a:b\"\n"),
        Catch::Contains(":3: hosts.\"Registry.Example\": token_username must not hold a colon"));
}

TEST_CASE("bad token_command settings are errors that say where and what", "[daemon][config]") {
    CHECK_THAT(error_of(kHost + "token_command = \"aws sts\"\n"),
               Catch::Contains(":2: hosts.\"Registry.Example\": token_command must be an array "
                               "of strings"));
    CHECK_THAT(error_of(kHost + "token_command = []\n"),
               Catch::Contains("token_command must be an array of strings"));
    CHECK_THAT(error_of(kHost + "token_command = [\"a\", 1]\n"),
               Catch::Contains("token_command must be an array of strings"));
    CHECK_THAT(error_of(kHost + "token_command = [\"\"]\n"),
               Catch::Contains("token_command must be an array of strings"));
    CHECK_THAT(error_of(kHost + "token_command = [\"a\"]\ntoken_ttl = \"10 minutes\"\n"),
               Catch::Contains("token_ttl: \"10 minutes\" is not a duration"));
    CHECK_THAT(error_of(kHost + "token_command = [\"a\"]\ntoken_ttl = 0\n"),
               Catch::Contains("token_ttl must be 1 second or more"));
    CHECK_THAT(error_of(kHost + "token_command = [\"a\"]\ntoken_command_timeout = \"0s\"\n"),
               Catch::Contains("token_command_timeout must be 1 second or more"));
    CHECK_THAT(error_of(kHost + "token_command = [\"a\"]\ntoken_command_timeout = true\n"),
               Catch::Contains("token_command_timeout must be a duration"));
    CHECK_THAT(error_of(kHost + "token_ttl = \"1h\"\n"),
               Catch::Contains("token_ttl needs a token_command"));
    CHECK_THAT(error_of(kHost + "token_comand = [\"a\"]\n"),
               Catch::Contains("unknown key \"hosts.Registry.Example.token_comand\""));
}

TEST_CASE("a config.toml another user may write: commands refused, daemon configured",
          "[daemon][config]") {
    const std::string text = kHost + "token_command = [\"/bin/tok\"]\n";
    SECTION("group-writable") {
        const ConfigFile file(text, fs::perms(0620));
        const Config config = parse_file(file);
        CHECK(config.token_commands.hosts.size() == 1);
        CHECK_THAT(config.token_commands.refused,
                   Catch::Contains("config.toml is group-writable (chmod g-w ") &&
                       Catch::Contains("another user could choose the programs"));
        CHECK(config.warnings == std::vector<std::string>{config.token_commands.refused});
    }
    SECTION("world-writable") {
        const ConfigFile file(text, fs::perms(0602));
        CHECK_THAT(parse_file(file).token_commands.refused,
                   Catch::Contains("is world-writable (chmod o-w "));
    }
    SECTION("in a directory others may write") {
        const ConfigFile file(text);
        fs::permissions(file.dir, fs::perms(0770));
        CHECK_THAT(parse_file(file).token_commands.refused,
                   Catch::Contains(file.dir.string() + " is group-writable"));
    }
    SECTION("a private file: commands run; without commands nothing is checked") {
        const ConfigFile file(text);
        CHECK(parse_file(file).token_commands.refused.empty());
        const ConfigFile loose("log_level = \"info\"\n", fs::perms(0666));
        CHECK(parse_file(loose).token_commands.refused.empty());
    }
    SECTION("a directory further up that others may write, unless it is sticky") {
        const ConfigFile file(text);
        const fs::path up = file.dir / "up";
        const fs::path nested = up / "hostkeeper";
        fs::create_directories(nested);
        std::ofstream(nested / "config.toml") << text;
        fs::permissions(nested / "config.toml", fs::perms(0600));
        fs::permissions(nested, fs::perms(0700));
        fs::permissions(up, fs::perms(0770));
        CHECK_THAT(writable_by_others(nested / "config.toml"),
                   Catch::Contains(up.string() + " is group-writable"));
        fs::permissions(up, fs::perms(01777));
        CHECK(writable_by_others(nested / "config.toml").empty());
    }
    SECTION("a file that is not there cannot be trusted") {
        CHECK_THAT(writable_by_others("/nonexistent-hk/config.toml"),
                   Catch::Contains("cannot be checked"));
    }
}

}  // namespace test_token_command_config
