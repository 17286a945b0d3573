#pragma once
// hostkeeperd's settings: defaults, then $XDG_CONFIG_HOME/hostkeeper/config.toml
// (or --config FILE), then command-line options. Every setting can be given
// both ways; an unknown key in the file is an error that names it.

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/archives/archive_options.hpp"
#include "daemon/backends/backend_options.hpp"
#include "daemon/credentials/credential_cache_options.hpp"
#include "daemon/credentials/token_command_options.hpp"
#include "daemon/discovery/discovery_options.hpp"
#include "daemon/http/http_options.hpp"
#include "daemon/registry/registry_options.hpp"

namespace hostkeeper::daemon::app {

struct Config {
    std::optional<std::filesystem::path> socket;  // else proto::resolve_socket_location()
    std::string log_level = "info";               // trace, debug, info, warn, error, off
    std::chrono::seconds idle_timeout{
        1800};  // on-demand daemons exit when idle this long; 0: never
    std::size_t max_connections = 128;
    std::chrono::seconds read_timeout{5};  // a client must send a whole request within this
    std::chrono::seconds shutdown_timeout{
        5};                                   // in-flight requests may take this long after SIGTERM
    std::chrono::seconds unlock_timeout{20};  // keyring unlock prompts
    bool notify = true;                       // desktop notifications of expiring tokens
    // keyring.backend and keyring.password_store_dir; main sets its unlock_timeout.
    backends::BackendOptions keyring;
    credentials::CredentialCacheOptions credentials;
    discovery::DiscoveryOptions discovery;
    registry::RegistryOptions registry;
    http::HttpOptions http;
    // The archive cache ([registry_cache]): main sets its dir and fetch_timeout.
    archives::ArchiveStoreOptions archives;
    // registry_cache.archive_dir (absolute): else archives::default_archive_dir().
    std::optional<std::filesystem::path> archive_dir;
    // registry_cache.fleet ("": none), fleet_push, fleet_modules.
    std::string fleet;
    bool fleet_push = true;
    bool fleet_modules = true;
    // [hosts."HOST"] git_username: the username git is answered with the
    // host's Terraform token (else "oauth2"), by normalized host.
    std::map<std::string, std::string> git_usernames;
    // [hosts."HOST"] token_command, token_ttl, token_command_timeout; and
    // why no command is run when config.toml may be written by another user.
    credentials::TokenCommandOptions token_commands;

    // Command line only.
    bool on_demand = false;     // started by the helper: idle timeout applies, log to the journal
    int ready_fd = -1;          // write "ready" here once listening
    bool check_config = false;  // only check the configuration, then exit
    // What is valid here but will not work where the packaged unit runs the
    // daemon (--check-config prints each).
    std::vector<std::string> warnings;
    std::optional<std::filesystem::path> config_file;
};

class ConfigError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A bad configuration file or option value, found after the command line
// itself was read: `command_line()` holds what the daemon needs to say so
// (ready_fd, socket, on_demand, check_config), with defaults elsewhere.
class InvalidConfig : public ConfigError {
  public:
    InvalidConfig(const std::string& what, Config command_line)
        : ConfigError(what), command_line_(std::move(command_line)) {}
    const Config& command_line() const { return command_line_; }

  private:
    Config command_line_;
};

// Result of parsing argv: a Config to run with, or an exit code (for --help,
// --version, or a usage error already reported on stderr/stdout).
struct ParsedArgs {
    std::optional<Config> config;
    int exit_code = 0;
};

// Throws InvalidConfig for a bad file or value.
ParsedArgs parse_args(int argc, char** argv);

// Parses "90", "90s", "10m", "2h", "1h30m", "1d" (or a TOML integer, in seconds).
std::chrono::seconds parse_duration(const std::string& text);

// Applies the TOML document `text` (read from `origin`) on top of `config`.
void apply_toml(Config& config, const std::string& text, const std::string& origin);

std::filesystem::path default_config_path();

// Every key config.toml may hold, dotted ("credentials.ttl"), and "TABLE." for
// each table. packaging/config.toml.example must show each one (a unit test checks).
const std::set<std::string>& config_file_keys();

}  // namespace hostkeeper::daemon::app
