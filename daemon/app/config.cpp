#include "daemon/app/config.hpp"

#include <toml++/toml.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <variant>
#include <vector>

#include "daemon/app/settings.hpp"
#include "daemon/credentials/file_trust.hpp"
#include "daemon/fleet/fleet_address.hpp"
#include "daemon/registry/mirror.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/git_credential.hpp"
#include "proto/hostname.hpp"
#include "proto/json.hpp"
#include "proto/paths.hpp"
#include "proto/version.hpp"

namespace hostkeeper::daemon::app {
namespace fs = std::filesystem;

namespace {

// The longest duration a setting may have, ten years: the daemon arms timers
// and computes deadlines (now + ttl + stale_if_error) in the steady clock's
// nanoseconds, which overflow (undefined behaviour) past about 292 years.
constexpr long long kMaxDurationSeconds = 10LL * 365 * 86400;
constexpr const char* kMaxDurationText = "10 years (315360000 seconds)";
static_assert(kMaxDurationSeconds == 315360000);

const std::set<std::string>& log_levels() {
    static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error", "off"};
    return levels;
}

std::string check_log_level(const std::string& level, const std::string& where) {
    if (log_levels().count(level) == 0) {
        throw ConfigError(where + ": log level \"" + level +
                          "\" is not one of trace, debug, info, warn, error, off");
    }
    return level;
}

// Where a value is, for its errors.
struct Place {
    std::string where;      // FILE:LINE: LABEL, the value's line
    std::string host;       // FILE:LINE: hosts."NAME", its host's table (a host's value)
    std::string_view key;   // its key in its table
    std::string_view file;  // FILE alone
};

// `node` as a duration; `where` ("FILE:LINE: LABEL") names it in errors.
std::chrono::seconds duration_value(const toml::node& node, const std::string& where) {
    // Strict types: toml++'s value<T>() would turn true into 1.
    if (const auto* seconds = node.as_integer()) {
        if (seconds->get() < 0) throw ConfigError(where + " must not be negative");
        if (seconds->get() > kMaxDurationSeconds)
            throw ConfigError(where + " must be at most " + kMaxDurationText);
        return std::chrono::seconds(seconds->get());
    }
    if (const auto* text = node.as_string()) {
        try {
            return parse_duration(text->get());
        } catch (const ConfigError& e) {
            throw ConfigError(where + ": " + e.what());
        }
    }
    throw ConfigError(where + " must be a duration: seconds, or a string such as \"10m\"");
}

std::string string_value(const toml::node& node, const Place& place) {
    const auto* value = node.as_string();
    if (value == nullptr) throw ConfigError(place.where + " must be a string");
    return value->get();
}

// The one reader of each type of value, for the top level's settings and
// a host's alike: `node` into `field` of `owner`.
template <class Owner>
void read_value(const toml::node& node, const PathIn<Owner>& field, Owner& owner,
                const Place& place) {
    field.get(owner) = string_value(node, place);
}
template <class Owner>
void read_value(const toml::node& node, const TextIn<Owner>& field, Owner& owner,
                const Place& place) {
    field.get(owner) = string_value(node, place);
}
template <class Owner>
void read_value(const toml::node& node, const LogLevelIn<Owner>& field, Owner& owner,
                const Place& place) {
    field.get(owner) = check_log_level(string_value(node, place), std::string(place.file));
}
template <class Owner>
void read_value(const toml::node& node, const DurationIn<Owner>& field, Owner& owner,
                const Place& place) {
    field.get(owner) = duration_value(node, place.where);
}
template <class Owner>
void read_value(const toml::node& node, const CountIn<Owner>& field, Owner& owner,
                const Place& place) {
    const auto* value = node.as_integer();
    if (value == nullptr || value->get() < 0)
        throw ConfigError(place.where + " must be a whole number of 0 or more");
    field.get(owner) = static_cast<std::size_t>(value->get());
}
template <class Owner>
void read_value(const toml::node& node, const BoolIn<Owner>& field, Owner& owner,
                const Place& place) {
    const auto* value = node.as_boolean();
    if (value == nullptr) throw ConfigError(place.where + " must be true or false");
    field.get(owner) = value->get();
}
template <class Owner>
void read_value(const toml::node& node, const UsernameIn<Owner>& field, Owner& owner,
                const Place& place) {
    const auto* text = node.as_string();
    if (text == nullptr || text->get().empty())
        throw ConfigError(place.where + " must be a string, not empty");
    if (field.basic_user_id && text->get().find(':') != std::string::npos)
        throw ConfigError(place.where + " must not hold a colon");
    try {
        field.get(owner) = proto::git_username(text->get());
    } catch (const proto::Error& e) {
        throw ConfigError(place.host + ": " + std::string(place.key) + ": " + e.what());
    }
}
template <class Owner>
void read_value(const toml::node& node, const ArgvIn<Owner>& field, Owner& owner,
                const Place& place) {
    const std::string bad = place.where +
                            " must be an array of strings, the program first (no shell), such as "
                            "[\"aws\", \"codeartifact\", ...]";
    const auto* array = node.as_array();
    if (array == nullptr || array->empty()) throw ConfigError(bad);
    std::vector<std::string> argv;
    for (const toml::node& element : *array) {
        const auto* text = element.as_string();
        if (text == nullptr || text->get().find('\0') != std::string::npos) throw ConfigError(bad);
        argv.push_back(text->get());
    }
    if (argv.front().empty()) throw ConfigError(bad);
    field.get(owner) = std::move(argv);
}
// A table's errors name its host's line.
template <class Owner>
void read_value(const toml::node& node, const JsonTableIn<Owner>& field, Owner& owner,
                const Place& place) {
    const std::string key(place.key);
    const auto* table = node.as_table();
    if (table == nullptr) throw ConfigError(place.host + ": \"" + key + "\" must be a table");
    // toml++ writes the table as JSON; nlohmann reads it back.
    std::ostringstream json;
    json << toml::json_formatter{*table};
    try {
        field.get(owner) = proto::parse_json(json.str());
    } catch (const proto::JsonError& e) {
        throw ConfigError(place.host + ": " + key + " " + e.what());
    }
}

// `text` with "{host}" as `host`.
std::string with_host(std::string_view text, const std::string& host) {
    constexpr std::string_view kHost = "{host}";
    std::string out(text);
    if (const auto at = out.find(kHost); at != std::string::npos)
        out.replace(at, kHost.size(), host);
    return out;
}

const HostSetting* host_setting(std::string_view key) {
    for (const HostSetting& setting : host_settings()) {
        if (setting.key == key) return &setting;
    }
    return nullptr;
}

// Reads config.toml's values into their settings: the top level's and its
// tables' by settings(), each [hosts."NAME"] table's by host_settings().
class TomlReader {
  public:
    TomlReader(const toml::table& root, std::string origin)
        : root_(root), origin_(std::move(origin)) {}

    void check_known(const std::set<std::string>& known) const { check_table(root_, "", known); }

    void settings(Config& config) const {
        for (const Setting& setting : app::settings()) {
            const std::string key(setting.key);
            const toml::node* node = root_.at_path(key).node();
            if (node == nullptr) continue;
            const Place place{at(*node) + ": \"" + key + "\"", "", setting.key, origin_};
            std::visit([&](const auto& field) { read_value(*node, field, config, place); },
                       setting.field);
        }
    }

    // [hosts."NAME"] tables, each by host_settings().
    void host_tables(Config& config) const {
        const auto* hosts_node = root_.get("hosts");
        if (hosts_node == nullptr) return;
        const auto* hosts = hosts_node->as_table();
        if (hosts == nullptr)
            throw ConfigError(at(*hosts_node) + ": \"hosts\" must be a table of hosts");
        for (const auto& [name, node] : *hosts) host_table(std::string(name.str()), node, config);
    }

  private:
    void host_table(const std::string& name, const toml::node& node, Config& config) const {
        const std::string label = "hosts.\"" + name + "\"";
        const std::string where_host = at(node) + ": " + label;
        std::string host;
        try {
            host = proto::normalize_hostname(name);
        } catch (const proto::Error& e) {
            throw ConfigError(where_host + ": " + e.what());
        }
        const auto* table = node.as_table();
        if (table == nullptr) throw ConfigError(where_host + " must be a table");
        for (const auto& [key, value] : *table) {
            if (host_setting(key.str()) == nullptr)
                throw ConfigError(at(value) + ": unknown key \"hosts." + name + "." +
                                  std::string(key.str()) + "\"");
        }
        if (table->empty()) {
            throw ConfigError(where_host +
                              " needs a \"services\" table, a git_username, a token_command or "
                              "rotate");
        }
        HostEntry entry;
        for (const HostSetting& setting : host_settings()) {
            const toml::node* value = table->get(setting.key);
            if (value == nullptr) continue;
            const Place place{at(*value) + ": " + with_host(setting.label, label), where_host,
                              setting.key, origin_};
            if (!setting.needs.empty() && !table->contains(setting.needs))
                throw ConfigError(place.where + " needs a " + std::string(setting.needs));
            std::visit([&](const auto& field) { read_value(*value, field, entry, place); },
                       setting.field);
            const auto* duration = std::get_if<DurationIn<HostEntry>>(&setting.field);
            if (duration != nullptr && duration->get(entry) < setting.min)
                throw ConfigError(at(*value) + ": " + with_host(setting.below_min, label));
        }
        store_host(config, host, *table, std::move(entry));
    }

    // What the host's table gave, into Config by normalized host.
    static void store_host(Config& config, const std::string& host, const toml::table& given,
                           HostEntry entry) {
        if (given.contains("services")) config.discovery.forced[host] = std::move(entry.services);
        if (given.contains("git_username")) config.git_usernames[host] = entry.git_username;
        if (given.contains("token_command"))
            config.token_commands.hosts[host] = std::move(entry.token_command);
        if (entry.rotate) config.discovery.rotate.insert(host);
        if (given.contains("rotate_lifetime"))
            config.discovery.host_rotate_lifetime[host] = entry.rotate_lifetime;
    }

    std::string at(const toml::node& node) const {
        return origin_ + ":" + std::to_string(node.source().begin.line);
    }

    void check_table(const toml::table& table, const std::string& prefix,
                     const std::set<std::string>& known) const {
        for (const auto& [k, node] : table) {
            const std::string key = prefix + std::string(k.str());
            if (known.count(key) != 0) continue;
            if (const auto* sub = node.as_table(); sub != nullptr && known.count(key + ".") != 0) {
                check_table(*sub, key + ".", known);
                continue;
            }
            throw ConfigError(at(node) + ": unknown key \"" + key + "\"");
        }
    }

    const toml::table& root_;
    std::string origin_;
};

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    if (!in) throw ConfigError("cannot read configuration file " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

std::chrono::seconds parse_duration(const std::string& text) {
    if (text.empty()) throw ConfigError("empty duration");
    long long total = 0;
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t j = i;
        while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) != 0) ++j;
        if (j == i || j - i > 9)
            throw ConfigError("\"" + text + "\" is not a duration such as 90, 90s, 10m, 2h or 1d");
        const long long n = std::stoll(text.substr(i, j - i));
        long long unit = 1;
        if (j < text.size()) {
            switch (text[j]) {
                case 's':
                    unit = 1;
                    break;
                case 'm':
                    unit = 60;
                    break;
                case 'h':
                    unit = 3600;
                    break;
                case 'd':
                    unit = 86400;
                    break;
                default:
                    throw ConfigError("\"" + text +
                                      "\" is not a duration such as 90, 90s, 10m, 2h or 1d");
            }
            ++j;
        } else if (i != 0) {
            throw ConfigError("\"" + text + "\" needs a unit after its last number");
        }
        total += n * unit;  // at most 999999999d past the limit: no overflow
        if (total > kMaxDurationSeconds) {
            throw ConfigError("\"" + text + "\" is longer than " + std::string(kMaxDurationText));
        }
        i = j;
    }
    return std::chrono::seconds(total);
}

const std::set<std::string>& config_file_keys() {
    static const std::set<std::string> keys = [] {
        std::set<std::string> all{"hosts"};  // [hosts."NAME"]: TomlReader::host_tables
        for (const Setting& setting : settings()) {
            const std::string key(setting.key);
            all.insert(key);
            if (const auto dot = key.find('.'); dot != std::string::npos)
                all.insert(key.substr(0, dot + 1));
        }
        return all;
    }();
    return keys;
}

namespace {

// The CA file is read by the daemon where it runs. hostkeeperd.service has a
// /tmp (and a /dev) of its own: a file there that a shell sees is one the
// unit's daemon does not.
void check_ca_file(Config& config) {
    const std::string& path = config.http.ca_file;
    const std::string where =
        (config.config_file ? config.config_file->string() + ": " : std::string()) +
        "discovery.ca_file " + path;
    std::string hidden;
    for (const char* dir : {"/tmp/", "/var/tmp/", "/dev/shm/"}) {
        if (path.rfind(dir, 0) == 0) hidden = std::string(dir).substr(0, std::strlen(dir) - 1);
    }
    const bool in_unit = std::getenv("INVOCATION_ID") != nullptr;
    const std::string unit_note =
        hidden.empty() ? std::string()
                       : "hostkeeperd.service has a private " + hidden +
                             " (PrivateTmp=, PrivateDevices=); keep the file under your home, "
                             "such as ~/.config/hostkeeper/ca.pem";
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const std::string why = std::strerror(errno);
        throw ConfigError(where + ": cannot be read (" + why + "); " +
                          (in_unit && !unit_note.empty()
                               ? unit_note
                               : "name a PEM file of CA certificates hostkeeperd can read"));
    }
    std::string head(std::size_t{64} * 1024, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head.find("-----BEGIN CERTIFICATE-----") == std::string::npos)
        throw ConfigError(where + ": holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    if (!in_unit && !unit_note.empty())
        config.warnings.push_back(where + ": readable here, but " + unit_note);
}

}  // namespace

fs::path default_config_path() {
    return proto::config_toml_path();
}

void apply_toml(Config& config, const std::string& text, const std::string& origin) {
    toml::table root;
    try {
        root = toml::parse(text, origin);
    } catch (const toml::parse_error& e) {
        throw ConfigError(origin + ":" + std::to_string(e.source().begin.line) + ": " +
                          std::string(e.description()));
    }
    const TomlReader reader(root, origin);
    reader.check_known(config_file_keys());
    reader.settings(config);
    reader.host_tables(config);
}

namespace {

// One value per setting: CLI11 reads counts itself (a bad one is a usage
// error), the rest are read after the file.
struct OptionValue {
    std::optional<std::string> text;
    std::optional<std::size_t> count;
};

// What the command line gave: --config, each setting's option (in the order
// of settings()), and the options of the command line alone.
struct CommandLineValues {
    std::optional<std::string> config_file;
    std::vector<OptionValue> values;
    bool on_demand = false;
    int ready_fd = -1;
    bool check_config = false;
};

// Declares hostkeeperd's options on `app`, each read into `given`.
void add_options(CLI::App& app, CommandLineValues& given) {
    app.add_option("--config", given.config_file,
                   "configuration file (default: " + default_config_path().string() + ")");
    const std::span<const Setting> table = settings();
    given.values.resize(table.size());
    for (std::size_t i = 0; i < table.size(); ++i) {
        const Setting& s = table[i];
        const std::string help = std::string(s.help) + " (default: " + default_text(s) + ")";
        if (std::holds_alternative<CountField>(s.field)) {
            app.add_option(std::string(s.option), given.values[i].count, help);
        } else {
            app.add_option(std::string(s.option), given.values[i].text, help);
        }
    }
    app.add_flag("--on-demand", given.on_demand,
                 "started by the helper: exit when idle, log to the journal");
    app.add_option("--ready-fd", given.ready_fd,
                   "write \"ready\" to this file descriptor once listening")
        ->check(CLI::Range(3, 1 << 20));
    app.add_flag(
        "--check-config", given.check_config,
        "check the configuration file and options, say what is wrong, and exit (0: valid)");
}

// The options, on top of what `config` holds.
void apply_options(Config& config, const std::vector<OptionValue>& values) {
    const std::span<const Setting> table = settings();
    for (std::size_t i = 0; i < table.size(); ++i) {
        const Setting& s = table[i];
        const OptionValue& value = values[i];
        if (!value.text && !value.count) continue;
        const std::string option(s.option);
        std::visit(Overloaded{
                       [&](const PathField& f) { f.get(config) = *value.text; },
                       [&](const TextField& f) { f.get(config) = *value.text; },
                       [&](const LogLevelField& f) {
                           f.get(config) = check_log_level(*value.text, option);
                       },
                       [&](const DurationField& f) {
                           try {
                               f.get(config) = parse_duration(*value.text);
                           } catch (const ConfigError& e) {
                               throw ConfigError(option + ": " + e.what());
                           }
                       },
                       [&](const CountField& f) { f.get(config) = *value.count; },
                       [&](const BoolField& f) {
                           if (*value.text != "true" && *value.text != "false")
                               throw ConfigError(option + " must be true or false");
                           f.get(config) = *value.text == "true";
                       },
                   },
                   s.field);
    }
}

// The file (when there is one), then the options, then the checks of what
// they hold together. Throws ConfigError.
void apply_file_and_options(Config& config, const CommandLineValues& given) {
    const fs::path file = given.config_file ? fs::path(*given.config_file) : default_config_path();
    std::error_code ec;
    if (given.config_file || fs::exists(file, ec)) {
        config.config_file = file;
        apply_toml(config, read_file(file), file.string());
        if (!config.token_commands.hosts.empty()) {
            config.token_commands.refused = credentials::writable_by_others(file);
            if (!config.token_commands.refused.empty())
                config.warnings.push_back(config.token_commands.refused);
        }
    }
    apply_options(config, given.values);  // options win over the file
    for (const Setting& s : settings()) {
        if (!s.zero_error.empty() && is_zero(s, config))
            throw ConfigError(std::string(s.zero_error));
    }
    if (!backends::is_backend_setting(config.keyring.backend)) {
        throw ConfigError("keyring.backend is \"" + config.keyring.backend +
                          "\": it must be \"auto\", \"secret-service\" or \"pass\"");
    }
    if (!config.http.ca_file.empty()) check_ca_file(config);
    if (config.archive_dir && !config.archive_dir->is_absolute()) {
        throw ConfigError("registry_cache.archive_dir is \"" + config.archive_dir->string() +
                          "\": it must be an absolute path");
    }
    if (!config.fleet.empty()) {
        try {
            fleet::parse_fleet_address(config.fleet);
        } catch (const fleet::FleetAddressError& e) {
            throw ConfigError(std::string("registry_cache.fleet: ") + e.what());
        }
    }
    if (!config.registry.mirror_url.empty()) {
        try {
            registry::make_mirror(config.registry.mirror_url);
        } catch (const proto::Error& e) {
            throw ConfigError(std::string("mirror_url: ") + e.what());
        }
    }
}

}  // namespace

ParsedArgs parse_args(int argc, char** argv) {
    CLI::App app{
        "hostkeeperd: per-user daemon that serves Terraform and OpenTofu credentials from the OS "
        "keyring (Secret Service), with a TTL cache, over a private Unix socket.",
        "hostkeeperd"};
    app.set_version_flag("--version", std::string("hostkeeperd ") + proto::product_version());
    app.footer("Every option can also be set in " + default_config_path().string() +
               " (see hostkeeper.toml(5)); options win over the file. Durations: seconds, or 90s, "
               "10m, 2h, 1d.");
    CommandLineValues given;
    add_options(app, given);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return {std::nullopt, app.exit(e) == 0 ? 0 : 2};
    }

    Config config;
    config.on_demand = given.on_demand;
    config.ready_fd = given.ready_fd;
    config.check_config = given.check_config;
    const std::span<const Setting> table = settings();
    for (std::size_t i = 0; i < table.size(); ++i) {
        if (table[i].key == "socket" && given.values[i].text) config.socket = *given.values[i].text;
    }
    const Config command_line = config;
    // Everything from here on may be wrong in the file or an option's value:
    // the daemon still needs the command line's own settings to say so.
    try {
        apply_file_and_options(config, given);
    } catch (const ConfigError& e) {
        throw InvalidConfig(e.what(), command_line);
    }
    return {config, 0};
}

}  // namespace hostkeeper::daemon::app
