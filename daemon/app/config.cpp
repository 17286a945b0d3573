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

// Reads one TOML value of a known key into its setting.
class TomlReader {
  public:
    TomlReader(const toml::table& root, std::string origin)
        : root_(root), origin_(std::move(origin)) {}

    void check_known(const std::set<std::string>& known) const { check_table(root_, "", known); }

    template <typename F>
    void string(const std::string& key, F&& set) const {
        if (const auto* node = find(key)) {
            const auto* value = node->as_string();
            if (value == nullptr) throw ConfigError(where(key) + " must be a string");
            set(value->get());
        }
    }

    void duration(const std::string& key, std::chrono::seconds& out) const {
        if (const auto* node = find(key)) out = duration_value(*node, where(key));
    }

    // `node` as a duration; `where_key` ("FILE:LINE: "KEY"") names it in errors.
    static std::chrono::seconds duration_value(const toml::node& node,
                                               const std::string& where_key) {
        // Strict types: toml++'s value<T>() would turn true into 1.
        if (const auto* seconds = node.as_integer()) {
            if (seconds->get() < 0) throw ConfigError(where_key + " must not be negative");
            if (seconds->get() > kMaxDurationSeconds)
                throw ConfigError(where_key + " must be at most " + kMaxDurationText);
            return std::chrono::seconds(seconds->get());
        }
        if (const auto* text = node.as_string()) {
            try {
                return parse_duration(text->get());
            } catch (const ConfigError& e) {
                throw ConfigError(where_key + ": " + e.what());
            }
        }
        throw ConfigError(where_key + " must be a duration: seconds, or a string such as \"10m\"");
    }

    void boolean(const std::string& key, bool& out) const {
        if (const auto* node = find(key)) {
            const auto* value = node->as_boolean();
            if (value == nullptr) throw ConfigError(where(key) + " must be true or false");
            out = value->get();
        }
    }

    void count(const std::string& key, std::size_t& out) const {
        if (const auto* node = find(key)) {
            const auto* value = node->as_integer();
            if (value == nullptr || value->get() < 0) {
                throw ConfigError(where(key) + " must be a whole number of 0 or more");
            }
            out = static_cast<std::size_t>(value->get());
        }
    }

    // [hosts."NAME"]: "services", forced discovery answers, as Terraform's
    // `host "NAME" { services = {...} }` blocks; "git_username", the
    // username git is answered with the host's Terraform token;
    // "token_command" with "token_ttl" and "token_command_timeout", a
    // command that prints the host's token; "rotate" and "rotate_lifetime",
    // the host's token rotation.
    void host_tables(discovery::DiscoveryOptions& discovery,
                     std::map<std::string, std::string>& git_usernames,
                     credentials::TokenCommandOptions& commands) const {
        std::map<std::string, proto::Json>& services = discovery.forced;
        const auto* hosts_node = root_.get("hosts");
        if (hosts_node == nullptr) return;
        const auto* hosts = hosts_node->as_table();
        if (hosts == nullptr)
            throw ConfigError(at(*hosts_node) + ": \"hosts\" must be a table of hosts");
        for (const auto& [name, node] : *hosts) {
            const std::string label = "hosts.\"" + std::string(name.str()) + "\"";
            const std::string where_host = at(node) + ": " + label;
            std::string host;
            try {
                host = proto::normalize_hostname(name.str());
            } catch (const proto::Error& e) {
                throw ConfigError(where_host + ": " + e.what());
            }
            const auto* table = node.as_table();
            if (table == nullptr) throw ConfigError(where_host + " must be a table");
            for (const auto& [key, value] : *table) {
                if (!kHostKeys.contains(key.str())) {
                    throw ConfigError(at(value) + ": unknown key \"hosts." +
                                      std::string(name.str()) + "." + std::string(key.str()) +
                                      "\"");
                }
            }
            if (const auto* username = table->get("git_username"))
                git_usernames[host] = git_username(*username, where_host);
            if (auto command = token_command(*table, label)) commands.hosts[host] = *command;
            rotation(*table, host, discovery);
            if (table->get("services") == nullptr) {
                if (!table->empty()) continue;
                throw ConfigError(where_host +
                                  " needs a \"services\" table, a git_username, a "
                                  "token_command or rotate");
            }
            const auto* forced = table->get_as<toml::table>("services");
            if (forced == nullptr) throw ConfigError(where_host + ": \"services\" must be a table");
            // toml++ writes the table as JSON; nlohmann reads it back.
            std::ostringstream json;
            json << toml::json_formatter{*forced};
            try {
                services[host] = proto::parse_json(json.str());
            } catch (const proto::JsonError& e) {
                throw ConfigError(where_host + ": services " + e.what());
            }
        }
    }

  private:
    static inline const std::set<std::string, std::less<>> kHostKeys{
        "services", "git_username",    "token_command",        "token_ttl",
        "rotate",   "rotate_lifetime", "token_command_timeout"};

    // A host's token_command (an argv of strings, the first not empty) with
    // its token_ttl and token_command_timeout (durations of 1s or more).
    std::optional<credentials::TokenCommand> token_command(const toml::table& table,
                                                           const std::string& label) const {
        const auto* argv = table.get("token_command");
        if (argv == nullptr) {
            for (const char* key : {"token_ttl", "token_command_timeout"}) {
                if (const auto* node = table.get(key))
                    throw ConfigError(at(*node) + ": " + label + ": " + key +
                                      " needs a token_command");
            }
            return std::nullopt;
        }
        const auto* array = argv->as_array();
        const std::string bad = at(*argv) + ": " + label +
                                ": token_command must be an array of strings, the program first "
                                "(no shell), such as [\"aws\", \"codeartifact\", ...]";
        if (array == nullptr || array->empty()) throw ConfigError(bad);
        credentials::TokenCommand command;
        for (const toml::node& element : *array) {
            const auto* text = element.as_string();
            if (text == nullptr || text->get().find('\0') != std::string::npos)
                throw ConfigError(bad);
            command.argv.push_back(text->get());
        }
        if (command.argv.front().empty()) throw ConfigError(bad);
        host_duration(table, "token_ttl", label, command.ttl);
        host_duration(table, "token_command_timeout", label, command.timeout);
        return command;
    }

    // A duration in a host's table, of 1 second or more.
    void host_duration(const toml::table& table, const char* key, const std::string& label,
                       std::chrono::seconds& out) const {
        const auto* node = table.get(key);
        if (node == nullptr) return;
        const std::string where = at(*node) + ": " + label + ": " + key;
        out = duration_value(*node, where);
        if (out.count() < 1) throw ConfigError(where + " must be 1 second or more");
    }

    // A host's "rotate" (automatic rotation) and "rotate_lifetime".
    void rotation(const toml::table& table, const std::string& host,
                  discovery::DiscoveryOptions& discovery) const {
        if (const auto* node = table.get("rotate")) {
            const auto* on = node->as_boolean();
            if (on == nullptr)
                throw ConfigError(at(*node) + ": hosts rotate must be true or false");
            if (on->get()) discovery.rotate.insert(host);
        }
        if (const auto* node = table.get("rotate_lifetime")) {
            const std::chrono::seconds lifetime =
                duration_value(*node, at(*node) + ": \"rotate_lifetime\"");
            if (lifetime < std::chrono::minutes(1))
                throw ConfigError(at(*node) + ": hosts rotate_lifetime must be at least 1m");
            discovery.host_rotate_lifetime[host] = lifetime;
        }
    }

    // A host's git_username: a string git can send (proto/git_credential.hpp), not empty.
    std::string git_username(const toml::node& node, const std::string& where_host) const {
        const auto* text = node.as_string();
        if (text == nullptr || text->get().empty())
            throw ConfigError(at(node) + ": hosts git_username must be a string, not empty");
        try {
            return proto::git_username(text->get());
        } catch (const proto::Error& e) {
            throw ConfigError(where_host + ": git_username: " + e.what());
        }
    }

    std::string at(const toml::node& node) const {
        return origin_ + ":" + std::to_string(node.source().begin.line);
    }

    const toml::node* find(const std::string& dotted) const { return root_.at_path(dotted).node(); }
    // FILE:LINE: "KEY", for a key that is there.
    std::string where(const std::string& key) const {
        const toml::node* node = find(key);
        return (node != nullptr ? at(*node) : origin_) + ": \"" + key + "\"";
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
    const TomlReader r(root, origin);
    r.check_known(config_file_keys());
    for (const Setting& setting : settings()) {
        const std::string key(setting.key);
        std::visit(Overloaded{
                       [&](const PathField& f) {
                           r.string(key, [&](const std::string& v) { f.get(config) = v; });
                       },
                       [&](const TextField& f) {
                           r.string(key, [&](const std::string& v) { f.get(config) = v; });
                       },
                       [&](const LogLevelField& f) {
                           r.string(key, [&](const std::string& v) {
                               f.get(config) = check_log_level(v, origin);
                           });
                       },
                       [&](const DurationField& f) { r.duration(key, f.get(config)); },
                       [&](const CountField& f) { r.count(key, f.get(config)); },
                       [&](const BoolField& f) { r.boolean(key, f.get(config)); },
                   },
                   setting.field);
    }
    r.host_tables(config.discovery, config.git_usernames, config.token_commands);
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
