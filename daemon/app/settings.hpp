#pragma once
// The tables of hostkeeperd's settings. settings(): each one's config.toml
// key, its command-line option, its type and its help text. host_settings():
// the keys of a [hosts."NAME"] table, with their type, default and the man
// page's section. The file parser, the options, the help text with its
// default (read from Config{}), the list of known keys and the documentation
// tests are all made from them. A new setting is a field with its default in
// an options struct (or HostEntry) plus one row here; the unit tests then ask
// for it in packaging/config.toml.example and the man pages.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/credentials/token_command_options.hpp"
#include "daemon/discovery/discovery_options.hpp"
#include "proto/git_credential.hpp"
#include "proto/json.hpp"

namespace hostkeeper::daemon::app {

struct Config;

// Where a setting lives in its Owner (Config, or a host's HostEntry), by its type.
template <class Owner>
struct PathIn {  // optional: unset means "work it out at start-up"
    std::optional<std::filesystem::path>& (*get)(Owner&);
};
template <class Owner>
struct TextIn {
    std::string& (*get)(Owner&);
};
template <class Owner>
struct LogLevelIn {  // trace, debug, info, warn, error or off
    std::string& (*get)(Owner&);
};
template <class Owner>
struct DurationIn {  // seconds, or "90s", "10m", "2h", "1d"; at most ten years
    std::chrono::seconds& (*get)(Owner&);
};
template <class Owner>
struct CountIn {  // a whole number of 0 or more
    std::size_t& (*get)(Owner&);
};
template <class Owner>
struct BoolIn {  // true or false
    bool& (*get)(Owner&);
};
template <class Owner>
struct UsernameIn {  // a username git can send (proto/git_credential.hpp), not empty
    std::string& (*get)(Owner&);
    // Also no colon: Basic authentication's user-id, which ends at its first.
    bool basic_user_id = false;
};
template <class Owner>
struct ArgvIn {  // an array of strings, the first not empty
    std::vector<std::string>& (*get)(Owner&);
};
template <class Owner>
struct JsonTableIn {  // a table, kept as JSON
    proto::Json& (*get)(Owner&);
};
template <class... F>
struct Overloaded : F... {  // std::visit(Overloaded{[](const PathField&) {...}, ...}, field)
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

using PathField = PathIn<Config>;
using TextField = TextIn<Config>;
using LogLevelField = LogLevelIn<Config>;
using DurationField = DurationIn<Config>;
using CountField = CountIn<Config>;
using BoolField = BoolIn<Config>;
using SettingField =
    std::variant<PathField, TextField, LogLevelField, DurationField, CountField, BoolField>;

struct Setting {
    std::string_view key;     // in config.toml, dotted: "discovery.ttl"
    std::string_view option;  // "--discovery-ttl"
    SettingField field;
    std::string_view help;  // the option's help, without its default
    // What the default means, for a setting whose default is empty; else
    // "" and the default is Config{}'s value.
    std::string_view default_note = {};
    // "": 0 is allowed; else 0 is refused with this error (after the file
    // and the options are read).
    std::string_view zero_error = {};
};

std::span<const Setting> settings();

// Whether a duration or count setting is 0 in `config`.
bool is_zero(const Setting& setting, Config& config);

// The setting's default as the help text and the man page say it: "10m", "128",
// "info", or its default_note.
std::string default_text(const Setting& setting);

// The setting's value in `config` as config.toml writes it ("\"10m\"", "128",
// "true", "\"info\""); "" for an unset path or empty text.
std::string toml_value(const Setting& setting, Config& config);

// One [hosts."NAME"] table as read, each value its default until the table
// gives it. The reader stores what the table gives into Config (by
// normalized host).
struct HostEntry {
    proto::Json services;  // forced discovery answers
    std::string git_username{proto::kDefaultGitUsername};
    credentials::TokenCommand token_command;  // argv, ttl, timeout
    bool rotate = false;
    std::chrono::seconds rotate_lifetime = discovery::DiscoveryOptions{}.rotate_lifetime;
};

using HostField = std::variant<JsonTableIn<HostEntry>, UsernameIn<HostEntry>, ArgvIn<HostEntry>,
                               DurationIn<HostEntry>, BoolIn<HostEntry>>;

// A key of a [hosts."NAME"] table. In errors, "{host}" in `label` and
// `below_min` stands for hosts."NAME".
struct HostSetting {
    std::string_view key;  // "token_ttl"
    HostField field;
    // How errors name the value: FILE:LINE: LABEL must be ... A table's
    // errors name its host's line and the key instead.
    std::string_view label = {};
    // The default as hostkeeper.toml(5) writes it; "": none (absent is off).
    std::string_view default_text = {};
    // The heading of hostkeeper.toml(5)'s section that describes it.
    std::string_view doc;
    // "": allowed alone; else only beside this key.
    std::string_view needs = {};
    // A duration below this is refused with `below_min`.
    std::chrono::seconds min{0};
    std::string_view below_min = {};
};

// In the order the reader reads (and reports) them.
std::span<const HostSetting> host_settings();

}  // namespace hostkeeper::daemon::app
