// packaging/config.toml.example, shipped in /usr/share/doc/hostkeeper: it
// parses, its values are the daemon's real defaults, and it shows every key
// the daemon knows (commented-out ones included) and no other: checked
// against the table of settings (settings.hpp). The manual's example
// (docs/manual/configuration.md) parses.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "daemon/app/config.hpp"
#include "daemon/app/settings.hpp"
#include "packaging/source_file.hpp"

namespace test_config_example {

using namespace hostkeeper::daemon::app;
using namespace hostkeeper::daemon::discovery;
using namespace hostkeeper::daemon::registry;

namespace {

using hostkeeper::test::source_file;

std::string example_text() {
    return source_file("packaging/config.toml.example");
}

// Each "key = value" of the example, dotted ("credentials.ttl"), as written
// (value without its comment), commented-out ones with a leading "# ".
std::map<std::string, std::string> values_in(const std::string& text) {
    std::map<std::string, std::string> values;
    std::string table;
    std::istringstream lines(text);
    const std::regex header(R"(^\[([a-z_]+)\])");
    const std::regex setting(R"(^(# )?([a-z_]+) = ("[^"]*"|[^ #]+))");
    std::smatch m;
    for (std::string line; std::getline(lines, line);) {
        if (std::regex_search(line, m, header)) {
            table = m[1].str() + ".";
        } else if (std::regex_search(line, m, setting)) {
            values[table + m[2].str()] = m[1].str() + m[3].str();
        }
    }
    return values;
}

// The example with its commented-out settings ("# key = value", and the
// forced-services example: "# [hosts...]", "# \"id\" = value") switched on.
std::string uncommented(const std::string& text) {
    return std::regex_replace(
        text, std::regex(R"(^# (([a-z_]+|"[a-z0-9.]+") = |\[hosts\.))", std::regex::multiline),
        "$1");
}

std::set<std::string> keys_in(const std::string& text) {
    std::set<std::string> keys;
    std::string table;
    std::istringstream lines(text);
    const std::regex header(R"(^\[([a-z_]+)\])");
    const std::regex hosts(R"(^\[hosts\.)");  // [hosts."NAME".services]: the key is "hosts"
    const std::regex host_table(R"(^\[hosts\."[^"]+"\]$)");  // [hosts."NAME"]: git_username
    const std::regex setting(R"(^([a-z_]+) = )");
    std::smatch m;
    for (std::string line; std::getline(lines, line);) {
        if (std::regex_search(line, host_table)) {
            keys.insert("hosts");
            table = "hosts.\"NAME\".";
        } else if (std::regex_search(line, hosts)) {
            keys.insert("hosts");
            table = "hosts.\"NAME\".services.";  // its entries are quoted service ids: not
                                                 // keys_in's business
        } else if (std::regex_search(line, m, header)) {
            table = m[1].str() + ".";
            keys.insert(table);
        } else if (std::regex_search(line, m, setting)) {
            keys.insert(table + m[1].str());
        }
    }
    return keys;
}

}  // namespace

TEST_CASE("the example configuration parses and holds exactly the defaults",
          "[packaging][config]") {
    Config config;
    REQUIRE_NOTHROW(apply_toml(config, example_text(), "config.toml.example"));
    const Config defaults;
    CHECK_FALSE(config.socket.has_value());
    CHECK(config.log_level == defaults.log_level);
    CHECK(config.idle_timeout == defaults.idle_timeout);
    CHECK(config.max_connections == defaults.max_connections);
    CHECK(config.read_timeout == defaults.read_timeout);
    CHECK(config.shutdown_timeout == defaults.shutdown_timeout);
    CHECK(config.unlock_timeout == defaults.unlock_timeout);
    CHECK(config.credentials.ttl == defaults.credentials.ttl);
    CHECK(config.credentials.max_lifetime == defaults.credentials.max_lifetime);
    CHECK(config.credentials.negative_ttl == defaults.credentials.negative_ttl);
    CHECK(config.credentials.max_entries == defaults.credentials.max_entries);
    const RegistryOptions& g = config.registry;
    CHECK(g.timeout == defaults.registry.timeout);
    CHECK(g.versions_ttl == defaults.registry.versions_ttl);
    CHECK(g.download_ttl == defaults.registry.download_ttl);
    CHECK(g.negative_ttl == defaults.registry.negative_ttl);
    CHECK(g.error_ttl == defaults.registry.error_ttl);
    CHECK(g.max_retry_after == defaults.registry.max_retry_after);
    CHECK(g.stale_if_error == defaults.registry.stale_if_error);
    CHECK(g.max_entries == defaults.registry.max_entries);
    CHECK(g.mirror_url.empty());
    CHECK(g.fetch_timeout == defaults.registry.fetch_timeout);
    const DiscoveryOptions& d = config.discovery;
    CHECK(d.timeout == defaults.discovery.timeout);
    CHECK(d.ttl == defaults.discovery.ttl);
    CHECK(d.min_ttl == defaults.discovery.min_ttl);
    CHECK(d.max_ttl == defaults.discovery.max_ttl);
    CHECK(d.negative_ttl == defaults.discovery.negative_ttl);
    CHECK(d.error_ttl == defaults.discovery.error_ttl);
    CHECK(d.max_retry_after == defaults.discovery.max_retry_after);
    CHECK(d.stale_if_error == defaults.discovery.stale_if_error);
    CHECK(d.max_entries == defaults.discovery.max_entries);
    CHECK(config.http.ca_file.empty());
    CHECK(d.forced.empty());
    CHECK(d.rotate.empty());
    CHECK(d.host_rotate_lifetime.empty());
    CHECK(config.git_usernames.empty());
    CHECK(config.token_commands.hosts.empty());
}

TEST_CASE("the example configuration shows every key the daemon knows", "[packaging][config]") {
    const std::string all = uncommented(example_text());
    Config config;
    REQUIRE_NOTHROW(apply_toml(config, all, "config.toml.example, uncommented"));
    CHECK(config.socket.has_value());
    CHECK_FALSE(config.http.ca_file.empty());
    CHECK(config.discovery.forced.size() == 1);
    CHECK(config.git_usernames.size() == 1);
    CHECK(config.token_commands.hosts.size() == 2);
    CHECK(config.token_commands.hosts["123456789012.dkr.ecr.eu-west-1.amazonaws.com"].username ==
          "AWS");
    CHECK(config.discovery.rotate.size() == 1);
    // A host's table holds the keys of host_settings(); its tables
    // ([hosts."NAME".services]) are "hosts" above.
    std::set<std::string> known = config_file_keys();
    for (const HostSetting& setting : host_settings()) {
        if (!std::holds_alternative<JsonTableIn<HostEntry>>(setting.field))
            known.insert("hosts.\"NAME\"." + std::string(setting.key));
    }
    CHECK(keys_in(all) == known);
}

TEST_CASE("the example configuration writes each setting of the table with its default",
          "[packaging][config]") {
    const std::map<std::string, std::string> values = values_in(example_text());
    Config defaults;
    for (const Setting& setting : settings()) {
        const std::string key(setting.key);
        INFO("config.toml.example: " << key);
        const auto it = values.find(key);
        REQUIRE(it != values.end());
        const std::string value = toml_value(setting, defaults);
        if (value.empty()) {
            // No default value to show (socket, ca_file, mirror_url): commented out.
            CHECK(it->second.rfind("# ", 0) == 0);
        } else {
            CHECK(it->second == value);
        }
    }
}

TEST_CASE("the manual's configuration example parses", "[packaging][config]") {
    const std::string page = source_file("docs/manual/configuration.md");
    const auto section = page.find("# Configuration");
    REQUIRE(section != std::string::npos);
    const auto begin = page.find("```toml\n", section);
    REQUIRE(begin != std::string::npos);
    const auto end = page.find("```\n", begin + 8);
    REQUIRE(end != std::string::npos);
    Config config;
    CHECK_NOTHROW(apply_toml(config, page.substr(begin + 8, end - begin - 8),
                             "docs/manual/configuration.md"));
    CHECK(config.log_level == "debug");
}

}  // namespace test_config_example
