#include "config.hpp"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "hostkeeper/proto/hostname.hpp"
#include "hostkeeper/proto/error.hpp"
#include "hostkeeper/proto/json.hpp"
#include "hostkeeper/proto/version.hpp"
#include "mirror.hpp"

namespace hostkeeper::daemon {
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
        throw ConfigError(where + ": log level \"" + level + "\" is not one of trace, debug, info, warn, error, off");
    }
    return level;
}

// Reads one TOML value of a known key into its setting.
class TomlReader {
public:
    TomlReader(const toml::table& root, std::string origin) : root_(root), origin_(std::move(origin)) {}

    void check_known(const std::set<std::string>& known) const {
        check_table(root_, "", known);
    }

    template <typename F>
    void string(const std::string& key, F&& set) const {
        if (const auto* node = find(key)) {
            const auto* value = node->as_string();
            if (value == nullptr) throw ConfigError(where(key) + " must be a string");
            set(value->get());
        }
    }

    void duration(const std::string& key, std::chrono::seconds& out) const {
        if (const auto* node = find(key)) {
            // Strict types: toml++'s value<T>() would turn true into 1.
            if (const auto* seconds = node->as_integer()) {
                if (seconds->get() < 0) throw ConfigError(where(key) + " must not be negative");
                if (seconds->get() > kMaxDurationSeconds)
                    throw ConfigError(where(key) + " must be at most " + kMaxDurationText);
                out = std::chrono::seconds(seconds->get());
            } else if (const auto* text = node->as_string()) {
                try {
                    out = parse_duration(text->get());
                } catch (const ConfigError& e) {
                    throw ConfigError(where(key) + ": " + e.what());
                }
            } else {
                throw ConfigError(where(key) + " must be a duration: seconds, or a string such as \"10m\"");
            }
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

    // [hosts."NAME".services]: forced discovery answers, as Terraform's
    // `host "NAME" { services = {...} }` blocks.
    void forced_services(std::map<std::string, proto::Json>& out) const {
        const auto* hosts_node = root_.get("hosts");
        if (hosts_node == nullptr) return;
        const auto* hosts = hosts_node->as_table();
        if (hosts == nullptr) throw ConfigError(at(*hosts_node) + ": \"hosts\" must be a table of hosts");
        for (const auto& [name, node] : *hosts) {
            const std::string where_host = at(node) + ": hosts.\"" + std::string(name.str()) + "\"";
            std::string host;
            try {
                host = proto::normalize_hostname(name.str());
            } catch (const proto::Error& e) {
                throw ConfigError(where_host + ": " + e.what());
            }
            const auto* table = node.as_table();
            if (table == nullptr) throw ConfigError(where_host + " must be a table");
            for (const auto& [key, value] : *table) {
                if (key.str() != "services") {
                    throw ConfigError(at(value) + ": unknown key \"hosts." + std::string(name.str()) + "." +
                                      std::string(key.str()) + "\"");
                }
            }
            const auto* services = table->get_as<toml::table>("services");
            if (services == nullptr) throw ConfigError(where_host + " needs a \"services\" table");
            // toml++ writes the table as JSON; nlohmann reads it back.
            std::ostringstream json;
            json << toml::json_formatter{*services};
            try {
                out[host] = proto::parse_json(json.str());
            } catch (const proto::JsonError& e) {
                throw ConfigError(where_host + ": services " + e.what());
            }
        }
    }

private:
    std::string at(const toml::node& node) const {
        return origin_ + ":" + std::to_string(node.source().begin.line);
    }

    const toml::node* find(const std::string& dotted) const {
        return root_.at_path(dotted).node();
    }
    // FILE:LINE: "KEY", for a key that is there.
    std::string where(const std::string& key) const {
        const toml::node* node = find(key);
        return (node != nullptr ? at(*node) : origin_) + ": \"" + key + "\"";
    }

    void check_table(const toml::table& table, const std::string& prefix, const std::set<std::string>& known) const {
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
        if (j == i || j - i > 9) throw ConfigError("\"" + text + "\" is not a duration such as 90, 90s, 10m, 2h or 1d");
        const long long n = std::stoll(text.substr(i, j - i));
        long long unit = 1;
        if (j < text.size()) {
            switch (text[j]) {
                case 's': unit = 1; break;
                case 'm': unit = 60; break;
                case 'h': unit = 3600; break;
                case 'd': unit = 86400; break;
                default: throw ConfigError("\"" + text + "\" is not a duration such as 90, 90s, 10m, 2h or 1d");
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
    static const std::set<std::string> keys{"socket", "log_level", "idle_timeout", "max_connections", "read_timeout",
                                            "shutdown_timeout", "credentials.", "credentials.ttl",
                                            "credentials.max_lifetime", "credentials.negative_ttl",
                                            "credentials.max_entries", "keyring.", "keyring.unlock_timeout",
                                            "discovery.", "discovery.timeout", "discovery.ttl", "discovery.min_ttl",
                                            "discovery.max_ttl", "discovery.negative_ttl", "discovery.error_ttl",
                                            "discovery.max_retry_after", "discovery.stale_if_error",
                                            "discovery.max_entries", "discovery.ca_file", "hosts", "registry.",
                                            "registry.timeout", "registry.versions_ttl", "registry.download_ttl",
                                            "registry.negative_ttl", "registry.error_ttl", "registry.max_retry_after",
                                            "registry.stale_if_error", "registry.max_entries", "registry.mirror_url",
                                            "registry.fetch_timeout"};
    return keys;
}

fs::path default_config_path() {
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && xdg[0] == '/') {
        return fs::path(xdg) / "hostkeeper" / "config.toml";
    }
    const char* home = std::getenv("HOME");
    return fs::path(home != nullptr ? home : "/") / ".config" / "hostkeeper" / "config.toml";
}

void apply_toml(Config& config, const std::string& text, const std::string& origin) {
    toml::table root;
    try {
        root = toml::parse(text, origin);
    } catch (const toml::parse_error& e) {
        throw ConfigError(origin + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
    }
    const TomlReader r(root, origin);
    r.check_known(config_file_keys());
    r.string("socket", [&](const std::string& v) { config.socket = v; });
    r.string("log_level", [&](const std::string& v) { config.log_level = check_log_level(v, origin); });
    r.duration("idle_timeout", config.idle_timeout);
    r.count("max_connections", config.max_connections);
    r.duration("read_timeout", config.read_timeout);
    r.duration("shutdown_timeout", config.shutdown_timeout);
    r.duration("credentials.ttl", config.credentials.ttl);
    r.duration("credentials.max_lifetime", config.credentials.max_lifetime);
    r.duration("credentials.negative_ttl", config.credentials.negative_ttl);
    r.count("credentials.max_entries", config.credentials.max_entries);
    r.duration("keyring.unlock_timeout", config.unlock_timeout);
    DiscoveryOptions& d = config.discovery;
    r.duration("discovery.timeout", d.timeout);
    r.duration("discovery.ttl", d.ttl);
    r.duration("discovery.min_ttl", d.min_ttl);
    r.duration("discovery.max_ttl", d.max_ttl);
    r.duration("discovery.negative_ttl", d.negative_ttl);
    r.duration("discovery.error_ttl", d.error_ttl);
    r.duration("discovery.max_retry_after", d.max_retry_after);
    r.duration("discovery.stale_if_error", d.stale_if_error);
    r.count("discovery.max_entries", d.max_entries);
    r.string("discovery.ca_file", [&](const std::string& v) { d.ca_file = v; });
    r.forced_services(d.forced);
    RegistryOptions& g = config.registry;
    r.duration("registry.timeout", g.timeout);
    r.duration("registry.versions_ttl", g.versions_ttl);
    r.duration("registry.download_ttl", g.download_ttl);
    r.duration("registry.negative_ttl", g.negative_ttl);
    r.duration("registry.error_ttl", g.error_ttl);
    r.duration("registry.max_retry_after", g.max_retry_after);
    r.duration("registry.stale_if_error", g.stale_if_error);
    r.count("registry.max_entries", g.max_entries);
    r.string("registry.mirror_url", [&](const std::string& v) { g.mirror_url = v; });
    r.duration("registry.fetch_timeout", g.fetch_timeout);
}

ParsedArgs parse_args(int argc, char** argv) {
    CLI::App app{"hostkeeperd: per-user daemon that serves Terraform and OpenTofu credentials from the OS "
                 "keyring (Secret Service), with a TTL cache, over a private Unix socket.",
                 "hostkeeperd"};
    app.set_version_flag("--version", std::string("hostkeeperd ") + proto::product_version());
    app.footer("Every option can also be set in " + default_config_path().string() +
               " (see hostkeeper.toml(5)); options win over the file. Durations: seconds, or 90s, 10m, 2h, 1d.");

    std::optional<std::string> config_file, socket, log_level, idle, read, shutdown, unlock, ttl, max_lifetime,
        negative_ttl;
    std::optional<std::string> d_timeout, d_ttl, d_min_ttl, d_max_ttl, d_negative_ttl, d_error_ttl, d_max_retry_after,
        d_stale, ca_file;
    std::optional<std::string> g_timeout, g_versions_ttl, g_download_ttl, g_negative_ttl, g_error_ttl,
        g_max_retry_after, g_stale, mirror_url, g_fetch_timeout;
    std::optional<std::size_t> max_connections, max_entries, d_max_entries, g_max_entries;
    bool on_demand = false;
    int ready_fd = -1;
    app.add_option("--config", config_file, "configuration file (default: " + default_config_path().string() + ")");
    app.add_option("--socket", socket, "listen here (default: $HOSTKEEPER_SOCKET, else $XDG_RUNTIME_DIR/hostkeeper/socket)");
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off (default: info)");
    app.add_option("--idle-timeout", idle, "when started on demand or by socket activation, exit after this long without clients; 0: never (default: 30m)");
    app.add_option("--max-connections", max_connections, "concurrent connections served (default: 128)");
    app.add_option("--read-timeout", read, "a client must send a whole request within this (default: 5s)");
    app.add_option("--shutdown-timeout", shutdown, "on SIGTERM, wait this long for requests in flight (default: 5s)");
    app.add_option("--unlock-timeout", unlock, "wait this long for a keyring unlock prompt (default: 20s)");
    app.add_option("--credentials-ttl", ttl, "keep credentials cached this long after last use; 0 disables caching (default: 10m)");
    app.add_option("--credentials-max-lifetime", max_lifetime, "and never longer than this after loading (default: 2h)");
    app.add_option("--credentials-negative-ttl", negative_ttl, "remember \"no credentials for this host\" this long; 0 disables (default: 1m)");
    app.add_option("--credentials-max-entries", max_entries, "cached hosts at most (default: 10000)");
    app.add_option("--discovery-timeout", d_timeout, "give up on a discovery document after this long, redirects included (default: 11s)");
    app.add_option("--discovery-ttl", d_ttl, "keep a discovery document this long unless Cache-Control says otherwise (default: 15m)");
    app.add_option("--discovery-min-ttl", d_min_ttl, "Cache-Control max-age is raised to at least this (default: 1m)");
    app.add_option("--discovery-max-ttl", d_max_ttl, "and lowered to at most this (default: 24h)");
    app.add_option("--discovery-negative-ttl", d_negative_ttl, "remember \"no services\" (404) this long (default: 5m)");
    app.add_option("--discovery-error-ttl", d_error_ttl, "remember a failed discovery this long before asking again (default: 10s)");
    app.add_option("--discovery-max-retry-after", d_max_retry_after, "honour a server's Retry-After up to this long (default: 10m)");
    app.add_option("--discovery-stale-if-error", d_stale, "serve the last good document this long past its expiry when refreshing fails (default: 24h)");
    app.add_option("--discovery-max-entries", d_max_entries, "cached discovery answers at most (default: 10000)");
    app.add_option("--registry-timeout", g_timeout, "give up on a registry or mirror request after this long, redirects included (default: 10s)");
    app.add_option("--registry-versions-ttl", g_versions_ttl, "keep version lists this long; Cache-Control may shorten it (default: 5m)");
    app.add_option("--registry-download-ttl", g_download_ttl, "keep download locations and provider packages this long (default: 1h)");
    app.add_option("--registry-negative-ttl", g_negative_ttl, "remember \"no such module, provider or version\" (404) this long (default: 1m)");
    app.add_option("--registry-error-ttl", g_error_ttl, "remember a failed registry request this long before asking again (default: 10s)");
    app.add_option("--registry-max-retry-after", g_max_retry_after, "honour a registry's Retry-After up to this long (default: 10m)");
    app.add_option("--registry-stale-if-error", g_stale, "serve the last good answer this long past its expiry when refreshing fails (default: 24h)");
    app.add_option("--registry-max-entries", g_max_entries, "cached registry and mirror documents at most (default: 4096)");
    app.add_option("--registry-fetch-timeout", g_fetch_timeout, "give up downloading a provider package after this long (default: 10m)");
    app.add_option("--mirror-url", mirror_url, "take providers from this network mirror (https) unless a request names another (default: none)");
    app.add_option("--ca-file", ca_file, "trust these CA certificates for discovery, registries and mirrors (default: $SSL_CERT_FILE / $SSL_CERT_DIR, else the system's)");
    app.add_flag("--on-demand", on_demand, "started by the helper: exit when idle, log to the journal");
    app.add_option("--ready-fd", ready_fd, "write \"ready\" to this file descriptor once listening")->check(CLI::Range(3, 1 << 20));
    bool check_config = false;
    app.add_flag("--check-config", check_config,
                 "check the configuration file and options, say what is wrong, and exit (0: valid)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return {std::nullopt, app.exit(e) == 0 ? 0 : 2};
    }

    Config config;
    config.on_demand = on_demand;
    config.ready_fd = ready_fd;
    config.check_config = check_config;
    if (socket) config.socket = *socket;
    const Config command_line = config;
    // Everything from here on may be wrong in the file or an option's value:
    // the daemon still needs the command line's own settings to say so.
    const auto apply_file_and_options = [&] {
        const fs::path file = config_file ? fs::path(*config_file) : default_config_path();
        std::error_code ec;
        if (config_file || fs::exists(file, ec)) {
            config.config_file = file;
            apply_toml(config, read_file(file), file.string());
        }
        if (socket) config.socket = *socket;  // options win over the file
        const auto duration = [](const std::optional<std::string>& text, const char* option, std::chrono::seconds& out) {
            if (!text) return;
            try {
                out = parse_duration(*text);
            } catch (const ConfigError& e) {
                throw ConfigError(std::string(option) + ": " + e.what());
            }
        };
        if (log_level) config.log_level = check_log_level(*log_level, "--log-level");
        duration(idle, "--idle-timeout", config.idle_timeout);
        duration(read, "--read-timeout", config.read_timeout);
        duration(shutdown, "--shutdown-timeout", config.shutdown_timeout);
        duration(unlock, "--unlock-timeout", config.unlock_timeout);
        duration(ttl, "--credentials-ttl", config.credentials.ttl);
        duration(max_lifetime, "--credentials-max-lifetime", config.credentials.max_lifetime);
        duration(negative_ttl, "--credentials-negative-ttl", config.credentials.negative_ttl);
        DiscoveryOptions& d = config.discovery;
        duration(d_timeout, "--discovery-timeout", d.timeout);
        duration(d_ttl, "--discovery-ttl", d.ttl);
        duration(d_min_ttl, "--discovery-min-ttl", d.min_ttl);
        duration(d_max_ttl, "--discovery-max-ttl", d.max_ttl);
        duration(d_negative_ttl, "--discovery-negative-ttl", d.negative_ttl);
        duration(d_error_ttl, "--discovery-error-ttl", d.error_ttl);
        duration(d_max_retry_after, "--discovery-max-retry-after", d.max_retry_after);
        duration(d_stale, "--discovery-stale-if-error", d.stale_if_error);
        if (d_max_entries) d.max_entries = *d_max_entries;
        if (ca_file) d.ca_file = *ca_file;
        if (d.timeout.count() == 0) throw ConfigError("discovery timeout must be at least 1 second");
        RegistryOptions& g = config.registry;
        duration(g_timeout, "--registry-timeout", g.timeout);
        duration(g_versions_ttl, "--registry-versions-ttl", g.versions_ttl);
        duration(g_download_ttl, "--registry-download-ttl", g.download_ttl);
        duration(g_negative_ttl, "--registry-negative-ttl", g.negative_ttl);
        duration(g_error_ttl, "--registry-error-ttl", g.error_ttl);
        duration(g_max_retry_after, "--registry-max-retry-after", g.max_retry_after);
        duration(g_stale, "--registry-stale-if-error", g.stale_if_error);
        duration(g_fetch_timeout, "--registry-fetch-timeout", g.fetch_timeout);
        if (g_max_entries) g.max_entries = *g_max_entries;
        if (mirror_url) g.mirror_url = *mirror_url;
        if (g.timeout.count() == 0) throw ConfigError("registry timeout must be at least 1 second");
        if (g.fetch_timeout.count() == 0) throw ConfigError("registry fetch_timeout must be at least 1 second");
        if (!g.mirror_url.empty()) {
            try {
                make_mirror(g.mirror_url);
            } catch (const proto::Error& e) {
                throw ConfigError(std::string("mirror_url: ") + e.what());
            }
        }
        if (max_connections) config.max_connections = *max_connections;
        if (max_entries) config.credentials.max_entries = *max_entries;
        if (config.max_connections == 0) throw ConfigError("max_connections must be at least 1");
        if (config.read_timeout.count() == 0) throw ConfigError("read_timeout must be at least 1 second");
    };
    try {
        apply_file_and_options();
    } catch (const ConfigError& e) {
        throw InvalidConfig(e.what(), command_line);
    }
    return {config, 0};
}

}  // namespace hostkeeper::daemon
