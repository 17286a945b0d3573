// packaging/config.toml.example, shipped in /usr/share/doc/hostkeeper: it
// parses, its values are the daemon's real defaults, and it shows every key
// the daemon knows (commented-out ones included).
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "config.hpp"

using namespace hostkeeper::daemon;

namespace {

std::string example_text() {
    std::ifstream in(std::string(HK_SOURCE_DIR) + "/packaging/config.toml.example");
    REQUIRE(in);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The example with its commented-out settings ("# key = value", and the
// forced-services example: "# [hosts...]", "# \"id\" = value") switched on.
std::string uncommented(const std::string& text) {
    return std::regex_replace(text, std::regex(R"(^# (([a-z_]+|"[a-z0-9.]+") = |\[hosts\.))", std::regex::multiline),
                              "$1");
}

std::set<std::string> keys_in(const std::string& text) {
    std::set<std::string> keys;
    std::string table;
    std::istringstream lines(text);
    const std::regex header(R"(^\[([a-z_]+)\])");
    const std::regex hosts(R"(^\[hosts\.)");  // [hosts."NAME".services]: the key is "hosts"
    const std::regex setting(R"(^([a-z_]+) = )");
    std::smatch m;
    for (std::string line; std::getline(lines, line);) {
        if (std::regex_search(line, hosts)) {
            keys.insert("hosts");
            table = "hosts.\"NAME\".services.";  // its entries are quoted service ids: not keys_in's business
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
}

TEST_CASE("the example configuration shows every key the daemon knows", "[packaging][config]") {
    const std::string all = uncommented(example_text());
    Config config;
    REQUIRE_NOTHROW(apply_toml(config, all, "config.toml.example, uncommented"));
    CHECK(config.socket.has_value());
    CHECK_FALSE(config.http.ca_file.empty());
    CHECK(config.discovery.forced.size() == 1);
    CHECK(keys_in(all) == config_file_keys());
}
