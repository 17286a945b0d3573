#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "daemon/app/config.hpp"

namespace test_config {

using namespace hostkeeper::daemon::app;
using namespace hostkeeper::daemon::discovery;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

ParsedArgs parse(std::vector<std::string> args) {
    args.insert(args.begin(), "hostkeeperd");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return parse_args(static_cast<int>(argv.size()), argv.data());
}

struct ConfigFile {
    explicit ConfigFile(const std::string& text) {
        char pattern[] = "/tmp/hk-unit.XXXXXX";
        dir = ::mkdtemp(pattern);
        path = dir / "config.toml";
        std::ofstream(path) << text;
    }
    ~ConfigFile() { fs::remove_all(dir); }
    fs::path dir;
    fs::path path;
};

// The error a config file gives, or "(accepted)".
std::string error_of(const std::string& text) {
    const ConfigFile file(text);
    try {
        parse({"--config", file.path.string()});
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(accepted)";
}

}  // namespace

TEST_CASE("durations: seconds or with units", "[daemon][config]") {
    CHECK(parse_duration("90") == 90s);
    CHECK(parse_duration("90s") == 90s);
    CHECK(parse_duration("10m") == 600s);
    CHECK(parse_duration("2h") == 7200s);
    CHECK(parse_duration("1h30m") == 5400s);
    CHECK(parse_duration("1d") == 86400s);
    CHECK(parse_duration("0") == 0s);
    CHECK_THROWS_AS(parse_duration(""), ConfigError);
    CHECK_THROWS_AS(parse_duration("10x"), ConfigError);
    CHECK_THROWS_AS(parse_duration("-5"), ConfigError);
    CHECK_THROWS_AS(parse_duration("1h30"), ConfigError);
    CHECK_THROWS_AS(parse_duration("m"), ConfigError);
}

// The daemon arms timers in the steady clock's nanoseconds: "999999999d"
// (or 9999999999 seconds) overflowed them: signed overflow, undefined
// behaviour. tests/fuzz/corpus/fuzz_config/regression-duration-overflow keeps it.
TEST_CASE("durations are at most ten years", "[daemon][config]") {
    CHECK(parse_duration("3650d") == 315360000s);
    CHECK_THROWS_WITH(parse_duration("3650d1s"),
                      "\"3650d1s\" is longer than 10 years (315360000 seconds)");
    CHECK_THROWS_AS(parse_duration("999999999d"), ConfigError);
    CHECK(error_of("idle_timeout = 315360000\n") == "(accepted)");
    CHECK_THAT(error_of("idle_timeout = 9999999999\n"),
               Catch::Contains("\"idle_timeout\" must be at most 10 years (315360000 seconds)"));
    CHECK_THAT(error_of("[credentials]\nttl = \"999999999d\"\n"),
               Catch::Contains("\"999999999d\" is longer than 10 years"));
    const ConfigFile none("");
    CHECK_THROWS_AS(parse({"--config", none.path.string(), "--idle-timeout", "999999999d"}),
                    ConfigError);
}

TEST_CASE("defaults", "[daemon][config]") {
    const ConfigFile none("");
    const auto parsed = parse({"--config", none.path.string()});
    REQUIRE(parsed.config);
    const Config& c = *parsed.config;
    CHECK(c.credentials.ttl == 600s);
    CHECK(c.credentials.max_lifetime == 7200s);
    CHECK(c.credentials.negative_ttl == 60s);
    CHECK(c.idle_timeout == 1800s);
    CHECK(c.log_level == "info");
    CHECK_FALSE(c.on_demand);
}

TEST_CASE("the file sets everything; options win over it", "[daemon][config]") {
    const ConfigFile file(R"(
log_level = "debug"
socket = "/tmp/x/socket"
idle_timeout = "5m"
max_connections = 7
read_timeout = 3
shutdown_timeout = "2s"
[credentials]
ttl = "1m"
max_lifetime = 600
negative_ttl = 0
max_entries = 50
[keyring]
unlock_timeout = "9s"
)");
    const auto from_file = parse({"--config", file.path.string()});
    REQUIRE(from_file.config);
    const Config& c = *from_file.config;
    CHECK(c.log_level == "debug");
    CHECK(c.socket == fs::path("/tmp/x/socket"));
    CHECK(c.idle_timeout == 300s);
    CHECK(c.max_connections == 7);
    CHECK(c.read_timeout == 3s);
    CHECK(c.shutdown_timeout == 2s);
    CHECK(c.credentials.ttl == 60s);
    CHECK(c.credentials.max_lifetime == 600s);
    CHECK(c.credentials.negative_ttl == 0s);
    CHECK(c.credentials.max_entries == 50);
    CHECK(c.unlock_timeout == 9s);

    const auto overridden =
        parse({"--config", file.path.string(), "--log-level", "trace", "--credentials-ttl", "2h",
               "--max-connections", "9", "--unlock-timeout", "1s", "--credentials-max-entries", "3",
               "--credentials-negative-ttl", "7", "--socket", "/tmp/y/s"});
    REQUIRE(overridden.config);
    CHECK(overridden.config->log_level == "trace");
    CHECK(overridden.config->credentials.ttl == 7200s);
    CHECK(overridden.config->credentials.max_lifetime == 600s);  // not overridden
    CHECK(overridden.config->max_connections == 9);
    CHECK(overridden.config->unlock_timeout == 1s);
    CHECK(overridden.config->credentials.max_entries == 3);
    CHECK(overridden.config->credentials.negative_ttl == 7s);
    CHECK(overridden.config->socket == fs::path("/tmp/y/s"));
}

TEST_CASE("unknown keys and bad values are errors that name the key", "[daemon][config]") {
    CHECK_THAT(error_of("log_levle = \"info\""), Catch::Contains("unknown key \"log_levle\""));
    CHECK_THAT(error_of("[credentials]\nttl = 5\ntll = 5"),
               Catch::Contains("unknown key \"credentials.tll\""));
    CHECK_THAT(error_of("[credentials]\nttl = 5\ntll = 5"), Catch::Contains(":3:"));  // the line
    CHECK_THAT(error_of("[nope]\nx = 1"), Catch::Contains("unknown key \"nope\""));
    CHECK_THAT(error_of("log_level = \"loud\""), Catch::Contains("not one of"));
    CHECK_THAT(error_of("[credentials]\nttl = true"), Catch::Contains("credentials.ttl"));
    CHECK_THAT(error_of("[credentials]\nttl = -4"), Catch::Contains("negative"));
    CHECK_THAT(error_of("max_connections = \"many\""), Catch::Contains("max_connections"));
    CHECK_THAT(error_of("max_connections = 0"), Catch::Contains("at least 1"));
    CHECK_THAT(error_of("this is = not toml ["), Catch::Contains("config.toml"));
    CHECK_THROWS_WITH(parse({"--config", "/nonexistent/config.toml"}),
                      Catch::Contains("cannot read"));
    CHECK_THROWS_WITH(parse({"--credentials-ttl", "soon"}), Catch::Contains("--credentials-ttl"));
}

TEST_CASE("--help and bad options exit without a config", "[daemon][config]") {
    CHECK(parse({"--no-such-option"}).exit_code == 2);
    CHECK_FALSE(parse({"--no-such-option"}).config.has_value());
}

TEST_CASE("the default file lives under XDG_CONFIG_HOME", "[daemon][config]") {
    const char* old = std::getenv("XDG_CONFIG_HOME");
    const std::string saved = old != nullptr ? old : "";
    ::setenv("XDG_CONFIG_HOME", "/cfg", 1);
    CHECK(default_config_path() == fs::path("/cfg/hostkeeper/config.toml"));
    if (old != nullptr) {
        ::setenv("XDG_CONFIG_HOME", saved.c_str(), 1);
    } else {
        ::unsetenv("XDG_CONFIG_HOME");
    }
}

TEST_CASE("discovery settings and forced services", "[daemon][config]") {
    const ConfigFile file(R"(
[discovery]
timeout = "3s"
ttl = "20m"
min_ttl = 0
max_ttl = "2h"
negative_ttl = "1m"
error_ttl = 4
max_retry_after = "5m"
stale_if_error = "1h"
max_entries = 12
ca_file = "/etc/hk/ca.pem"

[hosts."Bücher.Example.COM:443".services]
"modules.v1" = "/modules/"
"login.v1" = { client = "terraform-cli", authz = "/oauth/authz", token = "/oauth/token", ports = [10000, 10010] }
)");
    // The option's file must be one the daemon can read (the file's is overridden).
    const fs::path ca = file.dir / "x.pem";
    std::ofstream(ca) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const auto parsed =
        parse({"--config", file.path.string(), "--discovery-ttl", "30m", "--ca-file", ca.string()});
    REQUIRE(parsed.config);
    const DiscoveryOptions& d = parsed.config->discovery;
    CHECK(d.timeout == 3s);
    CHECK(d.ttl == 1800s);  // the option wins
    CHECK(d.min_ttl == 0s);
    CHECK(d.max_ttl == 7200s);
    CHECK(d.negative_ttl == 60s);
    CHECK(d.error_ttl == 4s);
    CHECK(d.max_retry_after == 300s);
    CHECK(d.stale_if_error == 3600s);
    CHECK(d.max_entries == 12);
    CHECK(parsed.config->http.ca_file == ca.string());
    REQUIRE(d.forced.size() == 1);
    const auto& services = d.forced.at("xn--bcher-kva.example.com");  // normalized
    CHECK(services.at("modules.v1") == "/modules/");
    CHECK(services.at("login.v1").at("ports") == hostkeeper::proto::Json::array({10000, 10010}));
}

TEST_CASE("bad forced services are errors that say where", "[daemon][config]") {
    CHECK_THAT(error_of("[hosts.\"ex_ample.com\".services]\n\"modules.v1\" = \"/m/\""),
               Catch::Contains("ex_ample.com"));
    CHECK_THAT(error_of("[hosts.\"a.example\"]\nservice = 1"),
               Catch::Contains("unknown key \"hosts.a.example.service\""));
    CHECK_THAT(error_of("[hosts.\"a.example\"]\n"), Catch::Contains("needs a \"services\" table"));
    CHECK_THAT(error_of("hosts = 3"), Catch::Contains("must be a table"));
    CHECK_THAT(error_of("[discovery]\ntimeout = 0"), Catch::Contains("at least 1 second"));
    CHECK_THAT(error_of("[discovery]\nttls = 0"),
               Catch::Contains("unknown key \"discovery.ttls\""));
}

TEST_CASE("git_username per host: alone or beside services, normalized host, checked",
          "[daemon][config]") {
    CHECK(error_of("[hosts.\"GitLab.Example\"]\ngit_username = \"deploy\"\n") == "(accepted)");
    CHECK(error_of("[hosts.\"a.example\"]\ngit_username = \"u\"\n[hosts.\"a.example\".services]\n"
                   "\"modules.v1\" = \"/m/\"\n") == "(accepted)");
    CHECK_THAT(error_of("[hosts.\"a.example\"]\ngit_username = 5\n"),
               Catch::Contains("git_username must be a string"));
    CHECK_THAT(error_of("[hosts.\"a.example\"]\ngit_username = \"\"\n"),
               Catch::Contains("not empty"));
    CHECK_THAT(error_of("[hosts.\"a.example\"]\ngit_username = \"a\\tb\"\n"),
               Catch::Contains("control character"));
    CHECK_THAT(error_of("[hosts.\"a.example\"]\ngit_username = \"u\"\nservices = 3\n"),
               Catch::Contains("\"services\" must be a table"));
    const ConfigFile file("[hosts.\"GitLab.Example:443\"]\ngit_username = \"deploy\"\n");
    const auto parsed = parse({"--config", file.path.string()});
    CHECK(parsed.config->git_usernames ==
          std::map<std::string, std::string>{{"gitlab.example", "deploy"}});
    CHECK(parsed.config->discovery.forced.empty());
}

TEST_CASE("rotate and rotate_lifetime per host: alone or beside others, checked",
          "[daemon][config]") {
    const ConfigFile file(
        "[hosts.\"App.Terraform.io\"]\nrotate = true\nrotate_lifetime = \"7d\"\n"
        "[hosts.\"tfe.example\"]\nrotate_lifetime = 3600\ngit_username = \"u\"\n"
        "[hosts.\"off.example\"]\nrotate = false\n");
    const auto parsed = parse({"--config", file.path.string()});
    const DiscoveryOptions& d = parsed.config->discovery;
    CHECK(d.rotate == std::set<std::string>{"app.terraform.io"});
    CHECK(d.host_rotate_lifetime ==
          std::map<std::string, std::chrono::seconds>{{"app.terraform.io", std::chrono::hours(168)},
                                                      {"tfe.example", std::chrono::hours(1)}});
    CHECK(d.rotate_lifetime == std::chrono::hours(24 * 30));
    CHECK_THAT(error_of("[hosts.\"a.example\"]\nrotate = \"yes\"\n"),
               Catch::Contains("rotate must be true or false"));
    CHECK_THAT(error_of("[hosts.\"a.example\"]\nrotate_lifetime = \"30s\"\n"),
               Catch::Contains("at least 1m"));
    CHECK_THAT(error_of("[hosts.\"a.example\"]\nrotate_lifetime = \"soon\"\n"),
               Catch::Contains("rotate_lifetime") && Catch::Contains("not a duration"));
}

TEST_CASE("forced services nested deeper than JSON may be are a configuration error",
          "[daemon][config]") {
    std::string nested = "\"/m/\"";
    for (int i = 0; i < 70; ++i) nested = "{ a = " + nested + " }";
    CHECK_THAT(error_of("[hosts.\"a.example\".services]\n\"modules.v1\" = " + nested),
               Catch::Contains("hosts.\"a.example\": services JSON nested deeper than 64 levels"));
}

TEST_CASE("the archive cache's cap: registry_cache.max_archive_bytes", "[daemon][config]") {
    const ConfigFile none("");
    const auto defaults = parse({"--config", none.path.string()});
    REQUIRE(defaults.config);
    CHECK(defaults.config->archives.max_bytes == std::size_t{5} * 1024 * 1024 * 1024);

    const ConfigFile file("[registry_cache]\nmax_archive_bytes = 1000000\n");
    const auto from_file = parse({"--config", file.path.string()});
    REQUIRE(from_file.config);
    CHECK(from_file.config->archives.max_bytes == 1000000);
    const auto overridden = parse({"--config", file.path.string(), "--max-archive-bytes", "77"});
    REQUIRE(overridden.config);
    CHECK(overridden.config->archives.max_bytes == 77);

    CHECK_THAT(error_of("[registry_cache]\nmax_archive_bytes = 0"),
               Catch::Contains("registry_cache.max_archive_bytes must be at least 1"));
    CHECK_THAT(error_of("[registry_cache]\nmax_archive_bytes = \"5G\""),
               Catch::Contains("registry_cache.max_archive_bytes"));
}

TEST_CASE("the archive directory: registry_cache.archive_dir, absolute", "[daemon][config]") {
    const ConfigFile none("");
    const auto defaults = parse({"--config", none.path.string()});
    REQUIRE(defaults.config);
    CHECK_FALSE(defaults.config->archive_dir);

    const ConfigFile file("[registry_cache]\narchive_dir = \"/srv/terraform-archives\"\n");
    const auto from_file = parse({"--config", file.path.string()});
    REQUIRE(from_file.config);
    CHECK(from_file.config->archive_dir == fs::path("/srv/terraform-archives"));
    const auto overridden = parse({"--config", file.path.string(), "--archive-dir", "/mnt/a"});
    REQUIRE(overridden.config);
    CHECK(overridden.config->archive_dir == fs::path("/mnt/a"));

    CHECK_THAT(error_of("[registry_cache]\narchive_dir = \"relative/archives\""),
               Catch::Contains("registry_cache.archive_dir is \"relative/archives\": it must be an "
                               "absolute path"));
}

TEST_CASE("ca_file is checked where the daemon will read it", "[daemon][config]") {
    const ConfigFile holder("");
    const fs::path pem = holder.dir / "ca.pem";
    const fs::path junk = holder.dir / "junk.pem";
    std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    std::ofstream(junk) << "not a certificate\n";
    const auto with_ca = [&](const std::string& path) {
        const ConfigFile file("[discovery]\nca_file = \"" + path + "\"\n");
        return parse({"--config", file.path.string()});
    };
    ::unsetenv("INVOCATION_ID");
    SECTION("a file that is not there is an error naming the file, not a valid configuration") {
        CHECK_THROWS_WITH(with_ca((holder.dir / "missing.pem").string()),
                          Catch::Contains("missing.pem: cannot be read (No such file") &&
                              Catch::Contains("discovery.ca_file"));
    }
    SECTION("a file without a certificate is an error") {
        CHECK_THROWS_WITH(with_ca(junk.string()), Catch::Contains("holds no PEM certificate"));
    }
    SECTION("a readable file under /tmp is valid here, with a warning about the unit") {
        const ParsedArgs parsed = with_ca(pem.string());
        REQUIRE(parsed.config);
        REQUIRE(parsed.config->warnings.size() == 1);
        CHECK_THAT(parsed.config->warnings[0],
                   Catch::Contains("hostkeeperd.service has a private /tmp (PrivateTmp="));
    }
    SECTION("inside the unit, a file under /tmp it cannot see names the private /tmp") {
        ::setenv("INVOCATION_ID", "0123456789abcdef", 1);
        CHECK_THROWS_WITH(
            with_ca("/tmp/hk-no-such-dir/ca.pem"),
            Catch::Contains("cannot be read") &&
                Catch::Contains("hostkeeperd.service has a private /tmp (PrivateTmp="));
        ::unsetenv("INVOCATION_ID");
    }
}

TEST_CASE("notify: desktop notifications on unless false", "[daemon][config]") {
    const ConfigFile none("");
    CHECK(parse({"--config", none.path.string()}).config->notify);
    const ConfigFile off("notify = false\n");
    CHECK_FALSE(parse({"--config", off.path.string()}).config->notify);
    CHECK(parse({"--config", off.path.string(), "--notify", "true"}).config->notify);
    CHECK_THAT(error_of("notify = \"no\""),
               Catch::Contains("notify") && Catch::Contains("must be true or false"));
    CHECK_THAT(error_of("notify = 0"), Catch::Contains("must be true or false"));
    CHECK_THROWS_WITH(parse({"--config", none.path.string(), "--notify", "off"}),
                      Catch::Contains("--notify must be true or false"));
}

TEST_CASE("host tables: each error names the file, the line and the key, word for word",
          "[daemon][config]") {
    const auto error_in = [](const std::string& text) -> std::string {
        Config config;
        try {
            apply_toml(config, text, "config.toml");
        } catch (const ConfigError& e) {
            return e.what();
        }
        return "(accepted)";
    };
    CHECK(error_in("log_level = \"loud\"") ==
          "config.toml: log level \"loud\" is not one of trace, debug, info, warn, error, off");
    CHECK(error_in("socket = 5") == "config.toml:1: \"socket\" must be a string");
    CHECK(error_in("notify = 0") == "config.toml:1: \"notify\" must be true or false");
    CHECK(error_in("max_connections = \"many\"") ==
          "config.toml:1: \"max_connections\" must be a whole number of 0 or more");
    CHECK(error_in("[credentials]\nttl = true") ==
          "config.toml:2: \"credentials.ttl\" must be a duration: seconds, or a string such as "
          "\"10m\"");
    CHECK(error_in("[credentials]\n\nttl = \"soon\"") ==
          "config.toml:3: \"credentials.ttl\": \"soon\" is not a duration such as 90, 90s, 10m, 2h "
          "or 1d");
    CHECK(error_in("[discovery]\nca_file = []") ==
          "config.toml:2: \"discovery.ca_file\" must be a string");
    CHECK(error_in("hosts = 3") == "config.toml:1: \"hosts\" must be a table of hosts");
    CHECK(error_in("[hosts.\"ex_ample.com\".services]\n\"modules.v1\" = \"/m/\"") ==
          "config.toml:1: hosts.\"ex_ample.com\": invalid hostname \"ex_ample.com\": character '_' "
          "is not allowed in a hostname");
    CHECK(error_in("[hosts]\n\"a.example\" = 3") ==
          "config.toml:2: hosts.\"a.example\" must be a table");
    CHECK(error_in("[hosts.\"a.example\"]\nservice = 1") ==
          "config.toml:2: unknown key \"hosts.a.example.service\"");
    CHECK(error_in("[hosts.\"a.example\"]\ngit_username = 5\nzzz = 1") ==
          "config.toml:3: unknown key \"hosts.a.example.zzz\"");
    CHECK(error_in("[hosts.\"a.example\"]\n") ==
          "config.toml:1: hosts.\"a.example\" needs a \"services\" table, a git_username, a "
          "token_command or rotate");
    CHECK(error_in("[hosts.\"a.example\"]\ngit_username = 5") ==
          "config.toml:2: hosts git_username must be a string, not empty");
    CHECK(error_in("[hosts.\"a.example\"]\ngit_username = \"\"") ==
          "config.toml:2: hosts git_username must be a string, not empty");
    CHECK(error_in("[hosts.\"a.example\"]\n\ngit_username = \"a\\tb\"") ==
          "config.toml:1: hosts.\"a.example\": git_username: the git username holds a control "
          "character");
    CHECK(error_in("[hosts.\"a.example\"]\ngit_username = \"u\"\n\nservices = 3") ==
          "config.toml:1: hosts.\"a.example\": \"services\" must be a table");
    CHECK(error_in("[hosts.\"a.example\"]\n\ntoken_ttl = \"1m\"") ==
          "config.toml:3: hosts.\"a.example\": token_ttl needs a token_command");
    CHECK(error_in("[hosts.\"a.example\"]\n\ntoken_command_timeout = 5\ntoken_ttl = 5") ==
          "config.toml:4: hosts.\"a.example\": token_ttl needs a token_command");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = []") ==
          "config.toml:2: hosts.\"a.example\": token_command must be an array of strings, the "
          "program first (no shell), such as [\"aws\", \"codeartifact\", ...]");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = \"aws\"") ==
          "config.toml:2: hosts.\"a.example\": token_command must be an array of strings, the "
          "program first (no shell), such as [\"aws\", \"codeartifact\", ...]");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = [\"\"]") ==
          "config.toml:2: hosts.\"a.example\": token_command must be an array of strings, the "
          "program first (no shell), such as [\"aws\", \"codeartifact\", ...]");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = [\"a\", 1]") ==
          "config.toml:2: hosts.\"a.example\": token_command must be an array of strings, the "
          "program first (no shell), such as [\"aws\", \"codeartifact\", ...]");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_ttl = 0\ntoken_command = 3") ==
          "config.toml:3: hosts.\"a.example\": token_command must be an array of strings, the "
          "program first (no shell), such as [\"aws\", \"codeartifact\", ...]");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = [\"a\"]\ntoken_ttl = \"10 minutes\"") ==
          "config.toml:3: hosts.\"a.example\": token_ttl: \"10 minutes\" is not a duration such as "
          "90, 90s, 10m, 2h or 1d");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = [\"a\"]\ntoken_ttl = 0") ==
          "config.toml:3: hosts.\"a.example\": token_ttl must be 1 second or more");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = [\"a\"]\ntoken_ttl = -1") ==
          "config.toml:3: hosts.\"a.example\": token_ttl must not be negative");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = [\"a\"]\ntoken_ttl = true") ==
          "config.toml:3: hosts.\"a.example\": token_ttl must be a duration: seconds, or a string "
          "such as \"10m\"");
    CHECK(error_in("[hosts.\"a.example\"]\ntoken_command = [\"a\"]\ntoken_ttl = 999999999999") ==
          "config.toml:3: hosts.\"a.example\": token_ttl must be at most 10 years (315360000 "
          "seconds)");
    CHECK(error_in(
              "[hosts.\"a.example\"]\ntoken_command = [\"a\"]\ntoken_command_timeout = \"0s\"") ==
          "config.toml:3: hosts.\"a.example\": token_command_timeout must be 1 second or more");
    CHECK(error_in("[hosts.\"a.example\"]\nrotate = \"yes\"") ==
          "config.toml:2: hosts rotate must be true or false");
    CHECK(error_in("[hosts.\"a.example\"]\nrotate_lifetime = \"30s\"") ==
          "config.toml:2: hosts rotate_lifetime must be at least 1m");
    CHECK(error_in("[hosts.\"a.example\"]\nrotate_lifetime = \"soon\"") ==
          "config.toml:2: \"rotate_lifetime\": \"soon\" is not a duration such as 90, 90s, 10m, 2h "
          "or 1d");
    CHECK(error_in("[hosts.\"a.example\"]\nrotate_lifetime = false") ==
          "config.toml:2: \"rotate_lifetime\" must be a duration: seconds, or a string such as "
          "\"10m\"");
    CHECK(error_in("[hosts.\"a.example\"]\nrotate = 1\ngit_username = 5") ==
          "config.toml:3: hosts git_username must be a string, not empty");
    CHECK(error_in("[hosts.\"b.example\"]\nrotate = 1\n[hosts.\"a.example\"]\nrotate = 2") ==
          "config.toml:4: hosts rotate must be true or false");
    CHECK(error_in("[hosts.\"a.example\"]\nrotate = true\nservices = 3") ==
          "config.toml:1: hosts.\"a.example\": \"services\" must be a table");
    CHECK(
        error_in(
            "[hosts.\"a.example\"]\nrotate_lifetime = 60\n[hosts.\"b.example\"]\nrotate = false") ==
        "(accepted)");
    std::string nested = "\"/m/\"";
    for (int i = 0; i < 70; ++i) nested = "{ a = " + nested + " }";
    CHECK(error_in("[hosts.\"a.example\".services]\n\"modules.v1\" = " + nested) ==
          "config.toml:1: hosts.\"a.example\": services JSON nested deeper than 64 levels");
}

}  // namespace test_config
