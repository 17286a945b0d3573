#include "helper/cli/registry_cache_setup.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "helper/cli/answer_text.hpp"
#include "helper/cli/user_systemd.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/launcher.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/hostname.hpp"
#include "proto/messages.hpp"
#include "proto/paths.hpp"
#include "proto/port_link.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;
using proto::kTfrcName;
using proto::registry_cache_config_path;
using proto::registry_cache_service_drop_in_path;

namespace {

// Where hostkeeperd writes for the registry cache: each tfrc file's
// directory, the cache directory (archives), the state directory (learned
// hosts); absolute, deduplicated.
std::vector<fs::path> daemon_write_dirs(const RegistryCacheConfig& config) {
    std::vector<fs::path> dirs;
    const auto add = [&dirs](const fs::path& dir) {
        if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
    };
    for (const auto& tfrc : config.tfrc_files) add(tfrc.parent_path());
    add(proto::cache_dir());
    add(proto::state_dir());
    return dirs;
}

// `text` as one quoted word of a unit file: '%' starts a specifier there,
// '\\' an escape, and in a command line (`command`) '$' a variable.
std::string unit_word(const std::string& text, bool command = false) {
    std::string word = "\"";
    for (const char c : text) {
        if (c == '%')
            word += "%%";
        else if (c == '$' && command)
            word += "$$";
        else if (c == '\\' || c == '"')
            word.append(1, '\\').append(1, c);
        else
            word += c;
    }
    return word + '"';
}

// The service drop-in's text. ExecStartPre=+ makes `dirs` before each start
// ('+': outside the sandbox, as the user), so that a directory the user
// deleted (~/.cache/hostkeeper, say) is there again and ReadWritePaths=
// makes it writable; with '-', a missing one would be skipped and stay
// read-only, and the daemon could not make it.
std::string service_drop_in_text(const std::vector<fs::path>& dirs) {
    std::string make = "ExecStartPre=+/bin/mkdir -p -m 0700 --";
    std::string writable = "ReadWritePaths=";
    bool first = true;
    for (const auto& dir : dirs) {
        make += " " + unit_word(dir.string(), true);
        writable += (first ? "" : " ") + unit_word("-" + dir.string());
        first = false;
    }
    return "# Written by \"hostkeeper setup --registry-cache\"; \"hostkeeper setup "
           "--registry-cache --undo\" removes it.\n# hostkeeperd writes the registry cache's host "
           "blocks, learned hosts and archives here; systemd makes them again before each "
           "start.\n[Service]\n" +
           make + "\n" + writable + "\n";
}

// True when `path` is a file whose first line is hostkeeperd's header.
bool written_by_daemon(const fs::path& path) {
    std::optional<std::string> text;
    try {
        text = proto::read_file_if_exists(path);
    } catch (const proto::FileError&) {
        return false;
    }
    return text && proto::is_daemon_tfrc(*text);
}

constexpr const char* kConfigRecord = "registry_cache_config";
constexpr const char* kDropInRecord = "registry_cache_drop_in";

template <typename T>
bool contains(const std::vector<T>& list, const T& value) {
    return std::find(list.begin(), list.end(), value) != list.end();
}

std::vector<std::string> path_strings(const std::vector<fs::path>& paths) {
    std::vector<std::string> text;
    text.reserve(paths.size());
    for (const auto& path : paths) text.push_back(path.string());
    return text;
}

// Stops the hostkeeperd answering on the user's socket, if any, so that the
// next one (started by systemd or on demand) reads the files as they are now.
void stop_running_daemon(client::ClientOptions options) {
    options.start_daemon = false;
    try {
        client::DaemonClient(options).stop();
    } catch (const client::NoDaemon&) {
        // Nothing answers: nothing to stop.
    } catch (const proto::Error&) {
        // A socket-activated daemon that cannot start (config_error) stops by itself.
    }
}

// systemctl --user daemon-reload, then hostkeeperd.socket restarted with the
// service stopped: the daemon that starts next gets the sockets systemd holds now.
void restart_units(const client::ClientOptions& client) {
    if (systemctl_user({"daemon-reload"}) != 0)
        throw std::runtime_error("systemctl --user daemon-reload failed");
    systemctl_user({"stop", client::kServiceUnit, client::kSocketUnit}, true);
    stop_running_daemon(client);  // one started on demand while the socket was off
    if (systemctl_user({"start", client::kSocketUnit}) != 0) {
        throw std::runtime_error(std::string("systemctl --user start ") + client::kSocketUnit +
                                 " failed; 'systemctl --user status " + client::kSocketUnit +
                                 "' says why");
    }
}

void note_cli_config_override(Plan& plan, const std::vector<terraform_config::ToolPaths>& tools) {
    for (const auto& paths : tools) {
        if (!paths.cli_config_from_env) continue;
        const fs::path tfrc = paths.config_dir / kTfrcName;
        plan.notes.push_back(
            "registry cache: TF_CLI_CONFIG_FILE is set, so " + paths.name + " reads only " +
            paths.cli_config.string() + " and not " + tfrc.string() +
            ": the registry cache does not apply to it. " + paths.name +
            "'s CLI configuration has no include directive; unset TF_CLI_CONFIG_FILE, or copy the "
            "host blocks from " +
            tfrc.string() + " into " + paths.cli_config.string() +
            " (they name only the registry port, which no other user can hold; copy them again "
            "whenever hostkeeperd rewrites them)");
    }
}

// A drop-in `text` at `path`; `what` says what it does. `dirs` are created
// first (ReadWritePaths= of a missing directory would not let the daemon
// create it).
void plan_drop_in(Plan& plan, const fs::path& path, const std::string& text,
                  const std::string& what, const std::vector<fs::path>& dirs = {}) {
    const auto previous = proto::read_file_if_exists(path);
    if (previous == text) {
        plan.notes.push_back("systemd: " + path.string() + " already " + what);
        return;
    }
    const std::string said = path.string() + " (" + what + ")";
    plan.steps.push_back({"systemd: would write " + said, "systemd: wrote " + said, [=] {
                              for (const auto& dir : dirs) fs::create_directories(dir);
                              fs::create_directories(path.parent_path());
                              proto::write_file_atomically(path, text, 0644);
                              return Json{{"action", kDropInRecord},
                                          {"path", path.string()},
                                          {"written", text},
                                          {"previous", previous ? Json(*previous) : Json()}};
                          }});
}

void plan_restart(Plan& plan, const client::ClientOptions& client) {
    if (client::user_manager_running()) {
        plan.steps.push_back(
            {std::string("systemd: would reload and restart ") + client::kSocketUnit +
                 " so that hostkeeperd starts with the registry cache",
             std::string("systemd: reloaded and restarted ") + client::kSocketUnit +
                 " (hostkeeperd starts with the registry cache on the next request)",
             [client] {
                 restart_units(client);
                 return Json();
             }});
        return;
    }
    plan.steps.push_back({"would stop a running hostkeeperd so that the next one reads " +
                              registry_cache_config_path().string(),
                          "stopped a running hostkeeperd (if any): the next one reads " +
                              registry_cache_config_path().string(),
                          [client] {
                              stop_running_daemon(client);
                              return Json();
                          }});
}

// Older setups made hostkeeperd.socket hold a TCP port of the user's own,
// which another user could take whenever it was let go: it goes.
void plan_old_drop_in_removal(Plan& plan) {
    const fs::path old = proto::registry_cache_socket_drop_in_path();
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(old, ec))) return;
    const std::string what = old.string() + " (an older setup's TCP port for " +
                             client::kSocketUnit + ", which another user could take)";
    plan.steps.push_back({"systemd: would remove " + what, "systemd: removed " + what, [old] {
                              proto::remove_file(old);
                              return Json();
                          }});
}

// `hosts` normalized, each once; a refusal for each that is not a hostname.
std::vector<std::string> registry_hostnames(Plan& plan, const std::vector<std::string>& hosts) {
    std::vector<std::string> named;
    for (const auto& host : hosts) {
        try {
            const std::string normal = proto::normalize_hostname(host);
            if (!contains(named, normal)) named.push_back(normal);
        } catch (const proto::Error& e) {
            plan.refusals.push_back("registry cache: \"" + host +
                                    "\" is not a registry hostname: " + e.what());
        }
    }
    return named;
}

// Persistent host blocks only where they name a port no other user can
// ever hold: the registry port, held by PID 1 from boot. nullopt, with a
// refusal, when there is none.
std::optional<std::uint16_t> trusted_registry_port(Plan& plan) {
    try {
        return proto::connect_port_service(proto::port_socket_path(), proto::PortVerb::probe,
                                           std::chrono::seconds(5))
            .port;
    } catch (const proto::PortServiceError& e) {
        plan.refusals.push_back(
            std::string("registry cache: no registry port here: ") + e.what() +
            ". The registry cache writes host blocks only for a port that no other user can "
            "ever bind (hostkeeper-port.socket, a system unit of the hostkeeper package: sudo "
            "systemctl enable --now hostkeeper-port.socket); without one, another local user "
            "could answer Terraform's registry requests. Nothing was written; Terraform and "
            "OpenTofu keep using the registries directly");
        return std::nullopt;
    }
}

// registry-cache.json as setup leaves it, and what it adds to the file.
struct ConfigChange {
    RegistryCacheConfig config;
    std::vector<std::string> hosts_added;
    std::vector<fs::path> tfrc_added;
};

// `existing` (or an empty file) with the `named` hosts and the `tools`' tfrc
// files it lacks.
ConfigChange merged_config(const std::optional<RegistryCacheConfig>& existing,
                           const std::vector<std::string>& named,
                           const std::vector<terraform_config::ToolPaths>& tools) {
    ConfigChange change{existing.value_or(RegistryCacheConfig{}), {}, {}};
    for (const auto& host : named) {
        if (contains(change.config.hosts, host)) continue;
        change.config.hosts.push_back(host);
        change.hosts_added.push_back(host);
    }
    for (const auto& paths : tools) {
        const fs::path tfrc = fs::absolute(paths.config_dir / kTfrcName);
        if (contains(change.config.tfrc_files, tfrc)) continue;
        change.config.tfrc_files.push_back(tfrc);
        change.tfrc_added.push_back(tfrc);
    }
    return change;
}

// The step that writes registry-cache.json, or a note that it already says
// what `change` would.
void plan_config_file(Plan& plan, const std::optional<RegistryCacheConfig>& existing,
                      const ConfigChange& change, const std::vector<std::string>& named,
                      const std::string& listen) {
    const fs::path path = registry_cache_config_path();
    if (existing && change.hosts_added.empty() && change.tfrc_added.empty() &&
        !existing->old_capability) {
        plan.notes.push_back("registry cache: " + path.string() + " already has " +
                             (named.empty() ? "the tools" : joined(named)) +
                             " (through the registry port " + listen + ")");
        return;
    }
    std::string what = path.string() + " (through the registry port " + listen;
    if (!change.hosts_added.empty()) what += "; hosts " + joined(change.hosts_added);
    if (!change.tfrc_added.empty())
        what += "; host blocks in " + joined(path_strings(change.tfrc_added));
    if (existing && existing->old_capability) what += "; the old URL capability dropped";
    what += ")";
    plan.steps.push_back(
        {"registry cache: would " + std::string(existing ? "update " : "write ") + what,
         "registry cache: " + std::string(existing ? "updated " : "wrote ") + what,
         [path, config = change.config, hosts_added = change.hosts_added,
          tfrc_added = change.tfrc_added, created = !existing]() {
             fs::create_directories(path.parent_path());
             proto::write_file_atomically(path, proto::registry_cache_file_text(config), 0600);
             return Json{{"action", kConfigRecord},
                         {"path", path.string()},
                         {"created", created},
                         {"hosts_added", hosts_added},
                         {"tfrc_files_added", path_strings(tfrc_added)}};
         }});
}

// With a systemd user manager: the older socket drop-in goes, and the
// service's drop-in lets the sandboxed daemon write where `config` needs.
void plan_service_drop_ins(Plan& plan, const RegistryCacheConfig& config) {
    plan_old_drop_in_removal(plan);
    const std::vector<fs::path> dirs = daemon_write_dirs(config);
    plan_drop_in(plan, registry_cache_service_drop_in_path(), service_drop_in_text(dirs),
                 std::string("lets the sandboxed ") + client::kServiceUnit + " write " +
                     joined(path_strings(dirs)),
                 dirs);
}

// hostkeeperd refused registry_cache_sync: why, on stderr. The exit code.
int report_sync_refused(const proto::Error& e) {
    if (e.code() == proto::ErrorCode::unknown_op) {
        std::fprintf(stderr,
                     "hostkeeper setup: the files are written, but the running hostkeeperd does "
                     "not know the registry cache (%s): it is older than this hostkeeper; "
                     "restart it: hostkeeper stop (or systemctl --user restart %s)\n",
                     e.what(), client::kServiceUnit);
    } else if (e.code() == proto::ErrorCode::unsupported_service) {
        std::fprintf(stderr,
                     "hostkeeper setup: the files are written, but the running hostkeeperd "
                     "has no registry cache (%s): it did not read %s; run 'hostkeeper stop', "
                     "then this again\n",
                     e.what(), registry_cache_config_path().c_str());
    } else {
        std::fprintf(stderr,
                     "hostkeeper setup: the files are written, but hostkeeperd could not "
                     "route the hosts: %s\n",
                     e.what());
    }
    return client::exit_code_for(e.code());
}

// Whether hostkeeperd holds the registry port, from its registry_cache
// status `cache`. The exit code.
int report_registration(const Json& cache) {
    if (cache.value("held", false)) {
        const std::string listen = cache.value("listen", Json()).is_string()
                                       ? cache["listen"].get<std::string>()
                                       : std::string("the registry port");
        std::printf(
            "registry cache: hostkeeperd is registered with hostkeeper-portd for the "
            "registry port %s\n",
            listen.c_str());
        return client::kExitOk;
    }
    const Json why = cache.value("error", Json());
    std::fprintf(stderr,
                 "hostkeeper setup: hostkeeperd is not registered for the registry port: %s; "
                 "the registry cache does not serve until it is ('hostkeeper doctor' says "
                 "more)\n",
                 why.is_string() ? why.get<std::string>().c_str() : "no reason given");
    return client::kExitFailed;
}

// One host of the status: routed (through which services) or not (why).
void report_route(const Json& host, const std::string& name) {
    if (host.value("routed", false)) {
        std::vector<std::string> services;
        if (host.contains("services") && host["services"].is_array()) {
            for (const auto& s : host["services"])
                if (s.is_string()) services.push_back(s.get<std::string>());
        }
        std::printf("registry cache: %s: routed through the cache (%s)\n", name.c_str(),
                    joined(services).c_str());
        return;
    }
    const Json why = host.value("reason", Json());
    std::printf("registry cache: %s: not routed: %s\n", name.c_str(),
                why.is_string() ? why.get<std::string>().c_str() : "no reason given");
}

// The `named` hosts of the status (every host when empty), on stdout.
void report_routes(const Json& cache, const std::vector<std::string>& named) {
    const auto list = cache.find("hosts");
    bool any = false;
    if (list != cache.end() && list->is_array()) {
        for (const auto& host : *list) {
            if (!host.is_object() || !host.value("host", Json()).is_string()) continue;
            const std::string name = host["host"].get<std::string>();
            if (!named.empty() && !contains(named, name)) continue;
            any = true;
            report_route(host, name);
        }
    }
    if (!any) {
        std::printf(
            "registry cache: no hosts yet; hostkeeperd learns each host Terraform or "
            "OpenTofu asks the helper about\n");
    }
}

}  // namespace

std::optional<RegistryCacheConfig> read_registry_cache_config() {
    const fs::path path = registry_cache_config_path();
    std::optional<std::string> text =
        proto::read_file_if_exists(path, proto::kMaxRegistryCacheFile);
    if (!text) return std::nullopt;
    const proto::ScrubGuard<std::string> scrub_text(*text);  // an older file's capability
    try {
        return proto::parse_registry_cache_file(*text);
    } catch (const proto::RegistryCacheFileError& e) {
        throw proto::FileError(path.string() + ": " + e.what() +
                               "; it is written by 'hostkeeper setup --registry-cache': move it "
                               "away and run that again");
    }
}

void plan_registry_cache(Plan& plan, const std::vector<terraform_config::ToolPaths>& tools,
                         const std::vector<std::string>& hosts,
                         const client::ClientOptions& client) {
    const std::vector<std::string> named = registry_hostnames(plan, hosts);
    const std::optional<std::uint16_t> port = trusted_registry_port(plan);
    if (!port) return;
    const std::string listen = "127.0.0.1:" + std::to_string(*port);
    std::optional<RegistryCacheConfig> existing;
    try {
        existing = read_registry_cache_config();
    } catch (const std::exception& e) {
        plan.refusals.push_back(std::string("registry cache: ") + e.what());
        return;
    }
    const ConfigChange change = merged_config(existing, named, tools);
    if (change.config.tfrc_files.empty()) {
        plan.refusals.push_back(
            "registry cache: no tool to write host blocks for (neither Terraform nor OpenTofu was "
            "found); name one with --terraform or --opentofu");
        return;
    }
    note_cli_config_override(plan, tools);
    plan_config_file(plan, existing, change, named, listen);
    const std::size_t before = plan.steps.size();
    if (client::user_manager_running()) plan_service_drop_ins(plan, change.config);
    if (plan.steps.size() > before || !existing || !change.hosts_added.empty() ||
        !change.tfrc_added.empty())
        plan_restart(plan, client);
}

int sync_registry_cache(const client::ClientOptions& client, const std::vector<std::string>& hosts,
                        bool dry_run) {
    std::vector<std::string> named;
    named.reserve(hosts.size());
    for (const auto& host : hosts) named.push_back(proto::normalize_hostname(host));
    if (dry_run) {
        std::printf(
            "registry cache: would ask hostkeeperd to discover %s and write the host blocks\n",
            named.empty() ? "every host it knows" : joined(named).c_str());
        return client::kExitOk;
    }
    Json request = proto::make_request(proto::Op::registry_cache_sync);
    if (!named.empty()) request["hosts"] = named;
    Json reply;
    try {
        reply = client::DaemonClient(client).call(request);
    } catch (const proto::Error& e) {
        return report_sync_refused(e);
    }
    const auto nested = reply.find("registry_cache");
    const Json& cache = nested != reply.end() && nested->is_object() ? *nested : reply;
    if (!cache.value("enabled", true)) {
        std::fprintf(stderr,
                     "hostkeeper setup: the running hostkeeperd has the registry cache off: it did "
                     "not read %s; run 'hostkeeper stop', then this again\n",
                     registry_cache_config_path().c_str());
        return client::kExitFailed;
    }
    const int status = report_registration(cache);
    report_routes(cache, named);
    return status;
}

bool is_registry_cache_record(const Json& action) {
    const std::string kind = action.value("action", "");
    return kind == kConfigRecord || kind == kDropInRecord;
}

std::string undo_registry_cache(const Json& action, bool dry_run,
                                const client::ClientOptions& client) {
    const std::string kind = action.value("action", "");
    const auto say = [dry_run](const std::string& would, const std::string& did) {
        return dry_run ? "would " + would : did;
    };
    const fs::path path = action.value("path", "");
    std::string said;
    const auto line = [&said](const std::string& text) {
        said += (said.empty() ? "" : "\n") + text;
    };
    if (kind == kDropInRecord) {
        const std::string written = action.value("written", "");
        const auto text = proto::read_file_if_exists(path);
        if (!text) {
            line(path.string() + " is already gone");
        } else if (*text != written) {
            return "left " + path.string() + " alone: it changed since setup wrote it";
        } else if (action["previous"].is_string()) {
            if (!dry_run)
                proto::write_file_atomically(path, action["previous"].get<std::string>(), 0644);
            line(say("restore ", "restored ") + path.string());
        } else {
            if (!dry_run) proto::remove_file(path);
            line(say("remove ", "removed ") + path.string());
        }
        if (!client::user_manager_running()) {
            line(std::string("left ") + client::kSocketUnit +
                 " alone: no systemd user manager runs");
        } else {
            if (!dry_run) restart_units(client);
            line(say("reload and restart ", "reloaded and restarted ") + client::kSocketUnit);
        }
        return said;
    }
    // kConfigRecord: the hosts and tfrc files it added go; the file too if it created it.
    std::vector<std::string> hosts_added, tfrc_added;
    for (const auto& h : action.value("hosts_added", Json::array()))
        if (h.is_string()) hosts_added.push_back(h.get<std::string>());
    for (const auto& t : action.value("tfrc_files_added", Json::array()))
        if (t.is_string()) tfrc_added.push_back(t.get<std::string>());
    std::optional<RegistryCacheConfig> config;
    try {
        config = read_registry_cache_config();
    } catch (const proto::FileError& e) {
        return std::string("left ") + path.string() + " alone: " + e.what();
    }
    if (!config) {
        line(path.string() + " is already gone");
    } else if (action.value("created", false)) {
        if (!dry_run) proto::remove_file(path);
        line(say("remove ", "removed ") + path.string() + " (setup created it)");
    } else {
        std::erase_if(config->hosts,
                      [&](const std::string& h) { return contains(hosts_added, h); });
        std::erase_if(config->tfrc_files,
                      [&](const fs::path& t) { return contains(tfrc_added, t.string()); });
        if (!dry_run)
            proto::write_file_atomically(path, proto::registry_cache_file_text(*config), 0600);
        line(say("remove ", "removed ") + "what setup added to " + path.string() +
             (hosts_added.empty() ? "" : " (hosts " + joined(hosts_added) + ")"));
    }
    // Before the tfrc files go: a running daemon would write them again.
    if (!dry_run) stop_running_daemon(client);
    for (const auto& tfrc : tfrc_added) {
        std::error_code ec;
        if (!fs::exists(fs::symlink_status(tfrc, ec))) continue;
        if (!written_by_daemon(tfrc)) {
            line("left " + tfrc + " alone: it does not start with hostkeeperd's header (edited?)");
            continue;
        }
        if (!dry_run) proto::remove_file(tfrc);
        line(say("remove ", "removed ") + tfrc);
    }
    return said;
}

}  // namespace hostkeeper::helper::cli
