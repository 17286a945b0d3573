#pragma once
// The one table of hostkeeperd's settings: each one's config.toml key, its
// command-line option, its type and its help text. The file parser, the
// options, the help text with its default (read from Config{}), the list of
// known keys and the documentation test are all made from it. A new setting
// is a field with its default in an options struct plus one row here; the
// unit tests then ask for it in packaging/config.toml.example and the man pages.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace hostkeeper::daemon::app {

struct Config;

// Where a setting lives in Config, by its type.
struct PathField {  // optional: unset means "work it out at start-up"
    std::optional<std::filesystem::path>& (*get)(Config&);
};
struct TextField {
    std::string& (*get)(Config&);
};
struct LogLevelField {  // trace, debug, info, warn, error or off
    std::string& (*get)(Config&);
};
struct DurationField {  // seconds, or "90s", "10m", "2h", "1d"; at most ten years
    std::chrono::seconds& (*get)(Config&);
};
struct CountField {  // a whole number of 0 or more
    std::size_t& (*get)(Config&);
};
struct BoolField {  // true or false
    bool& (*get)(Config&);
};
template <class... F>
struct Overloaded : F... {  // std::visit(Overloaded{[](const PathField&) {...}, ...}, field)
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

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

}  // namespace hostkeeper::daemon::app
