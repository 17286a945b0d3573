#include "daemon/app/settings.hpp"

#include <array>

#include "daemon/app/config.hpp"

namespace hostkeeper::daemon::app {
namespace {

// The accessor of Config's member `member` (e.g. discovery.ttl). The
// argument is a member path, which parentheses cannot enclose.
// clang-format off
#define HK_AT(member) +[](Config& c) -> auto& { return c.member; }  // NOLINT(bugprone-macro-parentheses)
#define HK_HOST(member) +[](HostEntry& h) -> auto& { return h.member; }  // NOLINT(bugprone-macro-parentheses)
// clang-format on

// In config.toml's order: top level, then each table.
constexpr std::array kSettings{
    Setting{
        "socket", "--socket", PathField{HK_AT(socket)}, "listen here",
        "$HOSTKEEPER_SOCKET, else /run/user/UID/hostkeeper/socket when that directory is yours, "
        "else $XDG_RUNTIME_DIR/hostkeeper/socket"},
    Setting{"log_level", "--log-level", LogLevelField{HK_AT(log_level)},
            "trace, debug, info, warn, error or off"},
    Setting{"idle_timeout", "--idle-timeout", DurationField{HK_AT(idle_timeout)},
            "when started on demand or by socket activation, exit after this long without clients; "
            "0: never"},
    Setting{.key = "max_connections",
            .option = "--max-connections",
            .field = CountField{HK_AT(max_connections)},
            .help = "concurrent connections served",
            .zero_error = "max_connections must be at least 1"},
    Setting{.key = "read_timeout",
            .option = "--read-timeout",
            .field = DurationField{HK_AT(read_timeout)},
            .help = "a client must send a whole request within this",
            .zero_error = "read_timeout must be at least 1 second"},
    Setting{"shutdown_timeout", "--shutdown-timeout", DurationField{HK_AT(shutdown_timeout)},
            "on SIGTERM, wait this long for requests in flight"},
    Setting{"notify", "--notify", BoolField{HK_AT(notify)},
            "show a desktop notification (org.freedesktop.Notifications) when a stored token "
            "comes within 30, 7 or 1 day of its expiry, and when it expires; false: the "
            "journal only"},

    Setting{"credentials.ttl", "--credentials-ttl", DurationField{HK_AT(credentials.ttl)},
            "keep credentials cached this long after last use; 0 disables caching"},
    Setting{"credentials.max_lifetime", "--credentials-max-lifetime",
            DurationField{HK_AT(credentials.max_lifetime)},
            "and never longer than this after loading"},
    Setting{"credentials.negative_ttl", "--credentials-negative-ttl",
            DurationField{HK_AT(credentials.negative_ttl)},
            "remember \"no credentials for this host\" this long; 0 disables"},
    Setting{"credentials.max_entries", "--credentials-max-entries",
            CountField{HK_AT(credentials.max_entries)}, "cached hosts at most"},

    Setting{"keyring.unlock_timeout", "--unlock-timeout", DurationField{HK_AT(unlock_timeout)},
            "wait this long for a keyring unlock prompt"},
    Setting{"keyring.backend", "--keyring-backend", TextField{HK_AT(keyring.backend)},
            "where credentials are kept: \"secret-service\", \"pass\", or \"auto\" (the Secret "
            "Service when it answers with a default collection, else an initialized pass store)"},
    Setting{"keyring.password_store_dir", "--password-store-dir",
            PathField{HK_AT(keyring.password_store_dir)}, "the pass backend's password store",
            "$PASSWORD_STORE_DIR, else ~/.password-store"},

    Setting{.key = "discovery.timeout",
            .option = "--discovery-timeout",
            .field = DurationField{HK_AT(discovery.timeout)},
            .help = "give up on a discovery document after this long, redirects included",
            .zero_error = "discovery timeout must be at least 1 second"},
    Setting{"discovery.ttl", "--discovery-ttl", DurationField{HK_AT(discovery.ttl)},
            "keep a discovery document this long unless Cache-Control says otherwise"},
    Setting{"discovery.min_ttl", "--discovery-min-ttl", DurationField{HK_AT(discovery.min_ttl)},
            "Cache-Control max-age is raised to at least this"},
    Setting{"discovery.max_ttl", "--discovery-max-ttl", DurationField{HK_AT(discovery.max_ttl)},
            "and lowered to at most this"},
    Setting{"discovery.negative_ttl", "--discovery-negative-ttl",
            DurationField{HK_AT(discovery.negative_ttl)},
            "remember \"no services\" (404) this long"},
    Setting{"discovery.error_ttl", "--discovery-error-ttl",
            DurationField{HK_AT(discovery.error_ttl)},
            "remember a failed discovery this long before asking again"},
    Setting{"discovery.max_retry_after", "--discovery-max-retry-after",
            DurationField{HK_AT(discovery.max_retry_after)},
            "honour a server's Retry-After up to this long"},
    Setting{"discovery.stale_if_error", "--discovery-stale-if-error",
            DurationField{HK_AT(discovery.stale_if_error)},
            "serve the last good document this long past its expiry when refreshing fails"},
    Setting{"discovery.max_entries", "--discovery-max-entries",
            CountField{HK_AT(discovery.max_entries)}, "cached discovery answers at most"},
    // Every HTTPS request's, not only discovery's: its key is where it always was.
    Setting{"discovery.ca_file", "--ca-file", TextField{HK_AT(http.ca_file)},
            "trust these CA certificates for discovery, registries and mirrors",
            "$SSL_CERT_FILE / $SSL_CERT_DIR, else the system's"},

    Setting{.key = "registry.timeout",
            .option = "--registry-timeout",
            .field = DurationField{HK_AT(registry.timeout)},
            .help = "give up on a registry or mirror request after this long, redirects included",
            .zero_error = "registry timeout must be at least 1 second"},
    Setting{"registry.versions_ttl", "--registry-versions-ttl",
            DurationField{HK_AT(registry.versions_ttl)},
            "keep version lists this long; Cache-Control may shorten it"},
    Setting{"registry.download_ttl", "--registry-download-ttl",
            DurationField{HK_AT(registry.download_ttl)},
            "keep download locations and provider packages this long"},
    Setting{"registry.negative_ttl", "--registry-negative-ttl",
            DurationField{HK_AT(registry.negative_ttl)},
            "remember \"no such module, provider or version\" (404) this long"},
    Setting{"registry.error_ttl", "--registry-error-ttl", DurationField{HK_AT(registry.error_ttl)},
            "remember a failed registry request this long before asking again"},
    Setting{"registry.max_retry_after", "--registry-max-retry-after",
            DurationField{HK_AT(registry.max_retry_after)},
            "honour a registry's Retry-After up to this long"},
    Setting{"registry.stale_if_error", "--registry-stale-if-error",
            DurationField{HK_AT(registry.stale_if_error)},
            "serve the last good answer this long past its expiry when refreshing fails"},
    Setting{"registry.max_entries", "--registry-max-entries",
            CountField{HK_AT(registry.max_entries)},
            "cached registry and mirror documents at most"},
    Setting{.key = "registry.fetch_timeout",
            .option = "--registry-fetch-timeout",
            .field = DurationField{HK_AT(registry.fetch_timeout)},
            .help = "give up downloading a provider package after this long",
            .zero_error = "registry fetch_timeout must be at least 1 second"},
    Setting{"registry.mirror_url", "--mirror-url", TextField{HK_AT(registry.mirror_url)},
            "take providers from this network mirror (https) unless a request names another",
            "none"},

    Setting{.key = "registry_cache.max_archive_bytes",
            .option = "--max-archive-bytes",
            .field = CountField{HK_AT(archives.max_bytes)},
            .help = "keep cached provider packages and module archives within this many bytes, "
                    "the least recently used going first",
            .zero_error = "registry_cache.max_archive_bytes must be at least 1"},
    Setting{"registry_cache.archive_dir", "--archive-dir", PathField{HK_AT(archive_dir)},
            "keep cached provider packages and module archives here (an absolute path): a "
            "directory of yours (0700), or one a group shares (setgid, group-writable, 2770)",
            "$XDG_CACHE_HOME/hostkeeper/archives"},
    Setting{"registry_cache.fleet", "--fleet", TextField{HK_AT(fleet)},
            "also keep provider packages and module archives in this OCI registry, which a "
            "fleet's machines share (oci://HOST[:PORT]/PREFIX): a miss here is taken from it "
            "before upstream",
            "none"},
    Setting{"registry_cache.fleet_push", "--fleet-push", BoolField{HK_AT(fleet_push)},
            "write the archives this machine downloads upstream to the fleet registry; false: "
            "only read it"},
    Setting{"registry_cache.fleet_modules", "--fleet-modules", BoolField{HK_AT(fleet_modules)},
            "keep module archives in the fleet registry too (they are trusted as far as its "
            "writers are); false: provider packages only"},
};

// hostkeeper.toml(5)'s sections on a host's table.
constexpr std::string_view kServicesDoc = "[hosts.\"NAME\".services]";
constexpr std::string_view kGitDoc = "[hosts.\"NAME\"] git_username";
constexpr std::string_view kCommandDoc =
    "[hosts.\"NAME\"] token_command, token_ttl, token_command_timeout, token_username";
constexpr std::string_view kRotateDoc = "[hosts.\"NAME\"] rotate, rotate_lifetime";

// In the order they are read: the first error found is the one reported.
const std::array kHostSettings{
    HostSetting{.key = "git_username",
                .field = UsernameIn<HostEntry>{HK_HOST(git_username)},
                .label = "hosts git_username",
                .default_text = "oauth2",
                .doc = kGitDoc},
    HostSetting{.key = "token_command",
                .field = ArgvIn<HostEntry>{HK_HOST(token_command.argv)},
                .label = "{host}: token_command",
                .doc = kCommandDoc},
    HostSetting{.key = "token_ttl",
                .field = DurationIn<HostEntry>{HK_HOST(token_command.ttl)},
                .label = "{host}: token_ttl",
                .default_text = "10m",
                .doc = kCommandDoc,
                .needs = "token_command",
                .min = std::chrono::seconds(1),
                .below_min = "{host}: token_ttl must be 1 second or more"},
    HostSetting{.key = "token_command_timeout",
                .field = DurationIn<HostEntry>{HK_HOST(token_command.timeout)},
                .label = "{host}: token_command_timeout",
                .default_text = "60s",
                .doc = kCommandDoc,
                .needs = "token_command",
                .min = std::chrono::seconds(1),
                .below_min = "{host}: token_command_timeout must be 1 second or more"},
    HostSetting{.key = "token_username",
                .field = UsernameIn<HostEntry>{HK_HOST(token_command.username), true},
                .label = "{host}: token_username",
                .doc = kCommandDoc,
                .needs = "token_command"},
    HostSetting{.key = "rotate",
                .field = BoolIn<HostEntry>{HK_HOST(rotate)},
                .label = "hosts rotate",
                .default_text = "false",
                .doc = kRotateDoc},
    HostSetting{.key = "rotate_lifetime",
                .field = DurationIn<HostEntry>{HK_HOST(rotate_lifetime)},
                .label = "\"rotate_lifetime\"",
                .default_text = "30d",
                .doc = kRotateDoc,
                .min = std::chrono::minutes(1),
                .below_min = "hosts rotate_lifetime must be at least 1m"},
    HostSetting{
        .key = "services", .field = JsonTableIn<HostEntry>{HK_HOST(services)}, .doc = kServicesDoc},
};

#undef HK_HOST
#undef HK_AT

// 1800 s -> "30m", as config.toml.example and the man page write defaults.
std::string duration_text(std::chrono::seconds d) {
    const long long s = d.count();
    if (s != 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
    if (s != 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
    return std::to_string(s) + "s";
}

// The value as written without TOML's quotes.
std::string plain_value(const SettingField& field, Config& config) {
    return std::visit(
        Overloaded{
            [&](const PathField& f) {
                return f.get(config) ? f.get(config)->string() : std::string();
            },
            [&](const TextField& f) { return f.get(config); },
            [&](const LogLevelField& f) { return f.get(config); },
            [&](const DurationField& f) { return duration_text(f.get(config)); },
            [&](const CountField& f) { return std::to_string(f.get(config)); },
            [&](const BoolField& f) { return std::string(f.get(config) ? "true" : "false"); },
        },
        field);
}

}  // namespace

std::span<const Setting> settings() {
    return kSettings;
}

std::span<const HostSetting> host_settings() {
    return kHostSettings;
}

bool is_zero(const Setting& setting, Config& config) {
    if (const auto* d = std::get_if<DurationField>(&setting.field))
        return d->get(config).count() == 0;
    if (const auto* n = std::get_if<CountField>(&setting.field)) return n->get(config) == 0;
    return false;
}

std::string default_text(const Setting& setting) {
    if (!setting.default_note.empty()) return std::string(setting.default_note);
    Config defaults;
    return plain_value(setting.field, defaults);
}

std::string toml_value(const Setting& setting, Config& config) {
    std::string value = plain_value(setting.field, config);
    if (value.empty() || std::holds_alternative<CountField>(setting.field) ||
        std::holds_alternative<BoolField>(setting.field))
        return value;
    return "\"" + value + "\"";
}

}  // namespace hostkeeper::daemon::app
