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

// The example with its commented-out settings ("# key = value") switched on.
std::string uncommented(const std::string& text) {
    return std::regex_replace(text, std::regex(R"(^# ([a-z_]+ = ))", std::regex::multiline), "$1");
}

std::set<std::string> keys_in(const std::string& text) {
    std::set<std::string> keys;
    std::string table;
    std::istringstream lines(text);
    const std::regex header(R"(^\[([a-z_]+)\])");
    const std::regex setting(R"(^([a-z_]+) = )");
    std::smatch m;
    for (std::string line; std::getline(lines, line);) {
        if (std::regex_search(line, m, header)) {
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
}

TEST_CASE("the example configuration shows every key the daemon knows", "[packaging][config]") {
    const std::string all = uncommented(example_text());
    Config config;
    REQUIRE_NOTHROW(apply_toml(config, all, "config.toml.example, uncommented"));
    CHECK(config.socket.has_value());
    CHECK(keys_in(all) == config_file_keys());
}
