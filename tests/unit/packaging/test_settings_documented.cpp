// The man pages against the tables of settings (settings.hpp): hostkeeper.toml(5)
// describes every key with its default, a host table's keys in their
// sections, hostkeeperd(8) names every option, and neither names one the
// daemon does not know; nor does the manual (docs/manual) name a dotted key, a
// host table's key or a hostkeeperd option the daemon does not know.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/app/config.hpp"
#include "daemon/app/settings.hpp"
#include "packaging/source_file.hpp"

namespace test_settings_documented {

using namespace hostkeeper::daemon::app;

namespace {

using hostkeeper::test::source_file;

std::string man_page(const std::string& name) {
    return source_file("packaging/man/" + name);
}

// Every page of the manual, and the README, by path.
std::map<std::string, std::string> manual_pages() {
    std::map<std::string, std::string> pages{{"README.md", source_file("README.md")}};
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(HK_SOURCE_DIR) + "/docs/manual")) {
        if (entry.path().extension() != ".md") continue;
        const std::string path = "docs/manual/" + entry.path().filename().string();
        pages.emplace(path, source_file(path));
    }
    return pages;
}

// roff's "\-" is a "-".
std::string unescaped(const std::string& text) {
    return std::regex_replace(text, std::regex(R"(\\-)"), "-");
}

// hostkeeper.toml(5)'s SETTINGS: each dotted key -> what its entry says after
// "Default: " up to a full stop, or at its place in "Defaults: A, B, C."; "?"
// when it says more than that, "" when it says nothing of its default.
// An entry is ".TP", then ".B key" or ".BR key1 \", \" key2", then its text.
std::map<std::string, std::string> documented_defaults(const std::string& page) {
    std::map<std::string, std::string> defaults;
    const std::string heading = "\n.SH SETTINGS\n";
    const auto settings_at = page.find(heading);
    REQUIRE(settings_at != std::string::npos);
    std::istringstream lines(page.substr(settings_at + heading.size()));
    std::string table;
    std::vector<std::string> keys;  // of the entry being read
    std::string text;
    const auto finish = [&] {
        std::smatch m;
        std::vector<std::string> values;
        if (std::regex_search(text, m, std::regex(R"(Defaults?: ([^.]*(\.[0-9][^.]*)*)\.)"))) {
            std::string list = m[1].str();
            for (std::size_t at; (at = list.find(", ")) != std::string::npos;
                 list.erase(0, at + 2)) {
                values.push_back(list.substr(0, at));
            }
            values.push_back(list.empty() ? "?" : list);
        }
        for (std::size_t i = 0; i < keys.size(); ++i) {
            defaults[table + keys[i]] = values.size() == keys.size() ? values[i]
                                        : values.empty()             ? ""
                                                                     : "?";
        }
        keys.clear();
        text.clear();
    };
    const std::regex section(R"(^\.SS \[([a-z_]+)\]$)");
    const std::regex entry_keys(R"(^\.BR? ([a-z_]+( "?, "? ?[a-z_]+)*)\s*$)");
    bool in_entry_head = false;
    std::smatch m;
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(".SH", 0) == 0) break;  // the end of SETTINGS
        if (line.rfind(".SS", 0) == 0 || line == ".TP") {
            finish();
            if (std::regex_match(line, m, section))
                table = m[1].str() + ".";
            else if (line.rfind(".SS", 0) == 0)
                table = "(not a settings table) ";
            in_entry_head = line == ".TP";
            continue;
        }
        if (in_entry_head && std::regex_match(line, m, entry_keys)) {
            std::string list = m[1].str();
            for (const std::regex word(R"([a-z_]+)"); std::regex_search(list, m, word);
                 list = m.suffix()) {
                keys.push_back(m[0].str());
            }
        } else {
            text += unescaped(line) + " ";
        }
        in_entry_head = false;
    }
    finish();
    return defaults;
}

// hostkeeperd(8)'s OPTIONS: the list after "is also an option", up to the first ".TP".
std::set<std::string> listed_options(const std::string& page) {
    const auto begin = page.find("\n.SH OPTIONS\n");
    REQUIRE(begin != std::string::npos);
    const auto end = page.find("\n.TP\n", begin);
    REQUIRE(end != std::string::npos);
    const std::string list = unescaped(page.substr(begin, end - begin));
    std::set<std::string> options;
    std::smatch m;
    for (std::string rest = list;
         std::regex_search(rest, m, std::regex(R"(\n\.BR (--[a-z-]+) [,.])")); rest = m.suffix()) {
        options.insert(m[1].str());
    }
    return options;
}

// hostkeeper.toml(5)'s sections on a host's table: each heading (after
// ".SS ") -> its text.
std::map<std::string, std::string> host_sections(const std::string& page) {
    std::map<std::string, std::string> sections;
    std::istringstream lines(page);
    std::string heading;
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(".SS ", 0) == 0 || line.rfind(".SH", 0) == 0) {
            heading = line.rfind(".SS [hosts.", 0) == 0 ? line.substr(4) : "";
            if (!heading.empty()) sections[heading];
        } else if (!heading.empty()) {
            sections[heading] += unescaped(line) + " ";
        }
    }
    return sections;
}

// The keys a host section's heading names: `[hosts."NAME".services]` ->
// services; `[hosts."NAME"] a, b` -> a, b.
std::vector<std::string> heading_keys(const std::string& heading) {
    std::smatch m;
    if (std::regex_match(heading, m, std::regex(R"(\[hosts\."NAME"\.([a-z_]+)\])")))
        return {m[1].str()};
    std::vector<std::string> keys;
    REQUIRE(std::regex_search(heading, m, std::regex(R"(^\[hosts\."NAME"\] )")));
    std::string list = m.suffix();
    for (const std::regex word(R"([a-z_]+)"); std::regex_search(list, m, word); list = m.suffix())
        keys.push_back(m[0].str());
    return keys;
}

// Each value a section's "Default: A." and "Defaults: B, C." give, in order.
std::vector<std::string> section_defaults(const std::string& text) {
    std::vector<std::string> values;
    std::smatch m;
    for (std::string rest = text;
         std::regex_search(rest, m, std::regex(R"(Defaults?: ([^.]*(\.[0-9][^.]*)*)\.)"));
         rest = m.suffix()) {
        std::string list = m[1].str();
        for (std::size_t at; (at = list.find(", ")) != std::string::npos; list.erase(0, at + 2))
            values.push_back(list.substr(0, at));
        values.push_back(list);
    }
    return values;
}

// Whether `setting`'s default text is the value HostEntry{} holds.
bool default_is_code(const HostSetting& setting) {
    HostEntry defaults;
    const std::string text(setting.default_text);
    return std::visit(
        Overloaded{
            [&](const DurationIn<HostEntry>& f) { return parse_duration(text) == f.get(defaults); },
            [&](const BoolIn<HostEntry>& f) {
                return text == (f.get(defaults) ? "true" : "false");
            },
            [&](const UsernameIn<HostEntry>& f) { return text == f.get(defaults); },
            [&](const ArgvIn<HostEntry>& f) { return text.empty() && f.get(defaults).empty(); },
            [&](const JsonTableIn<HostEntry>&) { return text.empty(); },
        },
        setting.field);
}

}  // namespace

TEST_CASE("hostkeeper.toml(5) describes every setting with its default, and no other",
          "[packaging][config]") {
    const std::map<std::string, std::string> documented =
        documented_defaults(man_page("hostkeeper.toml.5"));
    std::set<std::string> keys;
    for (const Setting& setting : settings()) {
        const std::string key(setting.key);
        keys.insert(key);
        INFO("hostkeeper.toml.5: " << key);
        const auto it = documented.find(key);
        REQUIRE(it != documented.end());
        if (setting.default_note.empty()) {
            CHECK(it->second == default_text(setting));
        } else {
            CHECK_FALSE(it->second.empty());  // says what the empty default means
        }
    }
    for (const auto& [key, value] : documented) {
        INFO("hostkeeper.toml.5 describes " << key);
        CHECK(keys.count(key) == 1);
    }
}

TEST_CASE("hostkeeper.toml(5) describes each host setting in its section, with its default",
          "[packaging][config]") {
    const std::map<std::string, std::string> sections =
        host_sections(man_page("hostkeeper.toml.5"));
    std::map<std::string, const HostSetting*> rows;
    for (const HostSetting& setting : host_settings()) {
        INFO("host setting " << setting.key << ", documented in " << setting.doc);
        CHECK(rows.emplace(std::string(setting.key), &setting).second);
        CHECK(default_is_code(setting));
        CHECK(sections.count(std::string(setting.doc)) == 1);
    }
    for (const auto& [heading, text] : sections) {
        INFO("hostkeeper.toml.5: .SS " << heading);
        std::vector<std::string> defaults;
        for (const std::string& key : heading_keys(heading)) {
            INFO("names " << key);
            const auto row = rows.find(key);
            REQUIRE(row != rows.end());
            CHECK(row->second->doc == heading);
            if (!row->second->default_text.empty())
                defaults.emplace_back(row->second->default_text);
        }
        CHECK(section_defaults(text) == defaults);
    }
}

TEST_CASE("hostkeeperd(8) names every setting's option, and no other", "[packaging][config]") {
    std::set<std::string> options;
    for (const Setting& setting : settings()) options.emplace(setting.option);
    CHECK(listed_options(man_page("hostkeeperd.8")) == options);
}

TEST_CASE("the manual names only settings and options the daemon knows", "[packaging][config]") {
    std::set<std::string> keys;
    // --exec-token-command: what a token command's transient unit runs.
    std::set<std::string> options{"--config", "--check-config", "--on-demand",         "--ready-fd",
                                  "--help",   "--version",      "--exec-token-command"};
    for (const Setting& setting : settings()) {
        keys.emplace(setting.key);
        options.emplace(setting.option);
    }
    // `table.key` of config.toml's tables, and `hostkeeperd --option`.
    const std::regex dotted_key(
        R"(`((credentials|discovery|registry|registry_cache|keyring|http)\.[a-z_]+)`)");
    const std::regex daemon_option(R"(hostkeeperd(\s+--[a-z-]+)*\s+(--[a-z-]+))");
    std::size_t named = 0;
    const std::map<std::string, std::string> pages = manual_pages();
    REQUIRE(pages.count("docs/manual/configuration.md") == 1);
    for (const auto& [path, text] : pages) {
        std::smatch m;
        for (std::string rest = text; std::regex_search(rest, m, dotted_key); rest = m.suffix()) {
            INFO(path << " names " << m[1].str());
            CHECK(keys.count(m[1].str()) == 1);
            ++named;
        }
        for (std::string rest = text; std::regex_search(rest, m, daemon_option);
             rest = m.suffix()) {
            INFO(path << " names hostkeeperd " << m[2].str());
            CHECK(options.count(m[2].str()) == 1);
            ++named;
        }
    }
    CHECK(named > 0);
}

TEST_CASE("the manual names every key of a host's table, and no other", "[packaging][config]") {
    const std::string page = source_file("docs/manual/configuration.md");
    const auto begin = page.find("A host's table may hold ");
    REQUIRE(begin != std::string::npos);
    const std::string paragraph = page.substr(begin, page.find("\n\n", begin) - begin);
    std::set<std::string> named;
    std::smatch m;
    for (std::string rest = paragraph; std::regex_search(rest, m, std::regex("`([a-z_]+)`"));
         rest = m.suffix())
        named.insert(m[1].str());
    std::set<std::string> keys;
    for (const HostSetting& setting : host_settings()) keys.emplace(setting.key);
    CHECK(named == keys);
}

}  // namespace test_settings_documented
