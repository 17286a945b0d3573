#include "helper/cli/registry_cache_doctor.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "helper/cli/answer_text.hpp"
#include "helper/cli/fleet_status.hpp"
#include "helper/cli/registry_cache_setup.hpp"
#include "helper/cli/run_directories.hpp"
#include "helper/terraform_config/tool_locations.hpp"
#include "proto/file_io.hpp"
#include "proto/messages.hpp"
#include "proto/paths.hpp"
#include "proto/port_link.hpp"
#include "proto/printable.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::Json;
using proto::kTfrcName;
using proto::registry_cache_config_path;
using proto::tfrc_listener_ports;

namespace {

std::vector<std::string> strings_in(const Json& object, const char* key) {
    std::vector<std::string> values;
    const auto field = object.find(key);
    if (field == object.end() || !field->is_array()) return values;
    for (const auto& item : *field)
        if (item.is_string()) values.push_back(item.get<std::string>());
    return values;
}

std::vector<terraform_config::ToolPaths> both_tools() {
    return {terraform_config::locate(terraform_config::Tool::terraform),
            terraform_config::locate(terraform_config::Tool::opentofu)};
}

// A tfrc file's blocks against the registry port (nullopt: none can be
// trusted); `cache_on`: registry-cache.json exists.
void check_tfrc(const DoctorSink& report, const fs::path& path, std::optional<int> registry_port,
                bool cache_on) {
    std::optional<std::string> text;
    try {
        text = proto::read_file_if_exists(path);
    } catch (const proto::FileError& e) {
        report.fail(e.what(), "remove it; hostkeeperd writes it again");
        return;
    }
    if (!text) {
        report.warn("registry cache: " + path.string() +
                    " does not exist yet (hostkeeperd writes it when it starts with the cache)");
        return;
    }
    if (!proto::is_daemon_tfrc(*text)) {
        report.fail("registry cache: " + path.string() +
                        " was not written by hostkeeperd (its first line is not hostkeeperd's)",
                    "move it away: hostkeeperd owns that name and writes it again");
        return;
    }
    for (const int port : tfrc_listener_ports(*text)) {
        if (registry_port && port == *registry_port) continue;
        report.fail("registry cache: " + path.string() +
                        " points Terraform and OpenTofu at 127.0.0.1:" + std::to_string(port) +
                        ", which is not a registry port root holds: another user could bind it "
                        "and answer their registry requests",
                    cache_on
                        ? "hostkeeper stop (the next hostkeeperd rewrites or withdraws the "
                          "blocks), or hostkeeper setup --registry-cache --undo"
                        : "hostkeeper setup --registry-cache --undo, or delete " + path.string());
        return;
    }
    report.ok("registry cache: " + path.string() + " is hostkeeperd's" +
              (registry_port ? " and names only the registry port" : ""));
}

// Which registry port can be trusted here: its number, or nullopt with the
// failure reported.
std::optional<int> check_registry_port(const DoctorSink& report) {
    const fs::path socket = proto::port_socket_path();
    try {
        const proto::PortConnection service =
            proto::connect_port_service(socket, proto::PortVerb::probe, std::chrono::seconds(5));
        const std::optional<unsigned> start = proto::unprivileged_port_start();
        report.ok("registry cache: mode: host blocks through the registry port 127.0.0.1:" +
                  std::to_string(service.port) + ", held for every user by root (" +
                  socket.string() + "); no other user can bind it (ports below " +
                  std::to_string(start.value_or(1024)) + " are root's)");
        return service.port;
    } catch (const proto::PortServiceError& e) {
        report.fail(
            std::string("registry cache: mode: off, no registry port can be trusted here: ") +
                e.what() + "; the tfrc files carry no blocks",
            "on a machine with systemd: sudo systemctl enable --now hostkeeper-port.socket; "
            "elsewhere (a container) the registry cache cannot be made safe: hostkeeper "
            "setup --registry-cache --undo");
        return std::nullopt;
    }
}

// The archive store as hostkeeperd reports it: a directory that cannot take
// archives (full, read-only) is a warning, since archives still reach
// Terraform, uncached.
void check_archive_store(const DoctorSink& report, const Json& cache) {
    const auto archives = cache.find("archives");
    if (archives == cache.end() || !archives->is_object()) return;
    const std::string problem = text_of(*archives, "store_problem", "");
    if (problem.empty()) {
        report.ok("registry cache: the archive cache stores archives (" +
                  std::to_string(archives->value("count", 0LL)) + " stored)");
        return;
    }
    // The daemon's message says what to do, except for a full directory.
    if (problem.find("the cache directory is full") == 0) {
        report.warn("registry cache: " + problem +
                    "; free space there (or lower registry_cache.max_archive_bytes in "
                    "config.toml, or point XDG_CACHE_HOME at a file system with room): "
                    "hostkeeperd tries the directory again a minute after it failed");
        return;
    }
    report.warn("registry cache: " + problem +
                " (hostkeeperd tries the directory again a minute after it failed)");
}

// With the cache off: the tfrc files that exist still carry no blocks that
// another user could answer.
void check_tfrc_files_without_cache(const DoctorSink& report) {
    std::vector<fs::path> seen;
    for (const auto& paths : both_tools()) {
        const fs::path tfrc = paths.config_dir / kTfrcName;
        std::error_code ec;
        if (std::find(seen.begin(), seen.end(), tfrc) != seen.end() || !fs::exists(tfrc, ec))
            continue;
        seen.push_back(tfrc);
        check_tfrc(report, tfrc, std::nullopt, false);
    }
}

// TF_CLI_CONFIG_FILE hides the tfrc files from both tools: one warning.
void check_cli_config_override(const DoctorSink& report) {
    for (const auto& paths : both_tools()) {
        if (!paths.cli_config_from_env) continue;
        report.warn("registry cache: TF_CLI_CONFIG_FILE is set, so " + paths.name + " reads only " +
                    paths.cli_config.string() +
                    " and the cache does not apply to it (no include directive exists: unset it, "
                    "or copy the host blocks from " +
                    (paths.config_dir / kTfrcName).string() +
                    "; they name only the registry port, which no other user can hold)");
        break;  // one variable for both tools
    }
}

// An older setup's socket drop-in, which setup --registry-cache removes.
void check_old_socket_drop_in(const DoctorSink& report) {
    std::error_code exists_ec;
    if (fs::exists(fs::symlink_status(proto::registry_cache_socket_drop_in_path(), exists_ec))) {
        report.warn("registry cache: " + proto::registry_cache_socket_drop_in_path().string() +
                    " (an older setup's) makes hostkeeperd.socket hold a TCP port of your own, "
                    "which hostkeeperd no longer uses: run hostkeeper setup --registry-cache to "
                    "remove it");
    }
}

// The registry_cache object of hostkeeperd's status; null when it does not
// answer or reports none (a failed call reported).
Json daemon_cache_status(const DoctorSink& report, const client::ClientOptions& client,
                         bool daemon_answers) {
    Json cache;
    if (!daemon_answers) return cache;
    try {
        const Json status =
            client::DaemonClient(client).call(proto::make_request(proto::Op::status));
        const auto found = status.find("registry_cache");
        if (found != status.end() && found->is_object()) cache = *found;
    } catch (const std::exception& e) {
        report.fail(std::string("registry cache: hostkeeperd's status: ") + e.what(),
                    "'hostkeeperd --log-level debug' in a terminal shows more");
    }
    return cache;
}

// Whether hostkeeperd serves the registry port: one finding.
void check_daemon_registration(const DoctorSink& report, const Json& cache, bool daemon_answers,
                               bool config_valid, const std::optional<int>& registry_port) {
    if (!daemon_answers && !config_valid) {
        report.skip(
            "registry cache: Terraform's requests are answered 503 with the configuration error "
            "above");
    } else if (!daemon_answers) {
        report.fail("registry cache: no hostkeeperd answers, so the registry port answers 503",
                    "see the hostkeeperd check above");
    } else if (!cache.is_object()) {
        report.fail(
            "registry cache: hostkeeperd does not report a registry cache: it is older "
            "than this hostkeeper",
            "hostkeeper stop (the next request starts the installed hostkeeperd)");
    } else if (!cache.value("enabled", false)) {
        report.fail("registry cache: hostkeeperd runs without it (it started before " +
                        registry_cache_config_path().string() + " was written)",
                    "hostkeeper stop (the next request starts one that reads the file)");
    } else if (const std::optional<SecondDaemon> second = second_daemon(cache)) {
        report.fail("registry cache: " + second->what, second->fix);
    } else if (!cache.value("held", false)) {
        report.fail("registry cache: hostkeeperd is not registered for the registry port: " +
                        text_of(cache, "error", "no reason given"),
                    registry_port ? "hostkeeper stop (the next request starts one that registers)"
                                  : "see the mode above");
    } else {
        report.ok("registry cache: hostkeeperd is registered with hostkeeper-portd for " +
                  text_of(cache, "listen", "the registry port") +
                  ": it receives your processes' connections, nobody else's");
    }
}

// The hosts hostkeeperd knows, routed or not (and why).
void check_hosts(const DoctorSink& report, const Json& cache) {
    const auto hosts = cache.find("hosts");
    if (hosts == cache.end() || !hosts->is_array()) return;
    if (hosts->empty())
        report.ok("registry cache: no hosts yet (hostkeeperd learns those Terraform asks about)");
    for (const auto& host : *hosts) {
        if (!host.is_object()) continue;
        std::string what = "registry cache: ";
        what.append(text_of(host, "host", "?")).append(" (").append(text_of(host, "source", "?"));
        if (host.value("routed", false)) {
            what.append(") is routed: ").append(joined(strings_in(host, "services")));
            if (host.contains("token_source"))
                what.append("; its token from: ").append(text_of(host, "token_source", "?"));
            report.ok(what);
        } else {
            report.warn(what.append(") is not routed: ")
                            .append(text_of(host, "reason", "no reason given")));
        }
    }
}

// Removes the directories of runs killed outright, and says so.
void remove_killed_runs(const DoctorSink& report, const client::ClientOptions& client) {
    const fs::path runs = runs_directory(socket_location(client));
    if (const std::size_t removed = remove_stale_runs(runs); removed > 0) {
        report.ok("registry cache: removed " + std::to_string(removed) +
                  " directory(ies) of 'hostkeeper exec --registry-cache' runs killed outright, "
                  "in " +
                  runs.string());
    }
}

// With the registry cache off: the runs hostkeeperd serves, and their hosts.
void check_runs(const DoctorSink& report, const client::ClientOptions& client,
                bool daemon_answers) {
    if (!daemon_answers) return;
    const Json cache = daemon_cache_status(report, client, daemon_answers);
    const long long runs = cache.is_object() ? cache.value("runs", 0LL) : 0;
    if (runs <= 0) return;
    report.ok("registry cache: hostkeeperd serves " + std::to_string(runs) +
              " run(s) of 'hostkeeper exec --registry-cache'");
    check_hosts(report, cache);
}

}  // namespace

void check_registry_cache(const DoctorSink& report, const client::ClientOptions& client,
                          bool daemon_answers, bool config_valid) {
    remove_killed_runs(report, client);
    std::optional<RegistryCacheConfig> config;
    try {
        config = read_registry_cache_config();
    } catch (const std::exception& e) {
        report.fail(std::string("registry cache: ") + e.what(),
                    "move the file away, then hostkeeper setup --registry-cache");
        return;
    }
    if (!config) {
        report.ok("registry cache: off (no " + registry_cache_config_path().string() + ")");
        check_tfrc_files_without_cache(report);
        check_runs(report, client, daemon_answers);
        return;
    }
    report.ok("registry cache: on (" + registry_cache_config_path().string() + ")");
    const std::optional<int> registry_port = check_registry_port(report);
    check_cli_config_override(report);
    check_old_socket_drop_in(report);
    const Json cache = daemon_cache_status(report, client, daemon_answers);
    check_daemon_registration(report, cache, daemon_answers, config_valid, registry_port);
    if (cache.is_object()) {
        check_hosts(report, cache);
        check_archive_store(report, cache);
        check_fleet(report, cache);
    }
    for (const auto& tfrc : config->tfrc_files) check_tfrc(report, tfrc, registry_port, true);
}

std::optional<SecondDaemon> second_daemon(const Json& cache) {
    const auto other = cache.find("other_daemon");
    if (cache.value("held", false) || other == cache.end() || !other->is_object()) return {};
    const auto pid = other->find("pid");
    const std::string pid_text = pid != other->end() && pid->is_number_integer()
                                     ? std::to_string(pid->get<long long>())
                                     : "?";
    std::string socket;
    proto::append_printable(socket, text_of(*other, "socket", ""));
    SecondDaemon found;
    found.what = "a second hostkeeperd of yours runs: pid " + pid_text +
                 (socket.empty() ? std::string() : " (socket " + socket + ")") +
                 " holds the registry port and answers Terraform's requests through it; the one "
                 "these clients reach does not (it keeps out of its way)";
    found.fix =
        "run one daemon: 'hostkeeper stop' stops the one these clients reach; start "
        "every client with the same XDG_RUNTIME_DIR" +
        (socket.empty() ? std::string() : " (or HOSTKEEPER_SOCKET=" + socket + ")");
    return found;
}

std::string registry_cache_status_line(const Json& cache) {
    if (!cache.value("enabled", false)) return "registry cache listener: off";
    std::string line = "registry cache listener: " + text_of(cache, "listen", "?");
    if (cache.value("held", false)) {
        const std::string by = text_of(cache, "held_by", "");
        line += " held" + (by.empty() ? std::string() : " (from " + by + ")");
    } else if (const std::optional<SecondDaemon> second = second_daemon(cache)) {
        line += " NOT held: " + second->what + "; fix: " + second->fix;
    } else {
        line += " NOT held: " + text_of(cache, "error", "no reason given");
    }
    long long routed = 0, total = 0;
    if (cache.contains("hosts") && cache["hosts"].is_array()) {
        for (const auto& host : cache["hosts"]) {
            ++total;
            if (host.is_object() && host.value("routed", false)) ++routed;
        }
    }
    line += ", " + std::to_string(routed) + " of " + std::to_string(total) + " hosts routed, " +
            std::to_string(cache.value("requests", 0LL)) + " requests (" +
            std::to_string(cache.value("refused", 0LL)) + " refused)";
    if (const auto archives = cache.find("archives");
        archives != cache.end() && archives->is_object()) {
        line += ", " + std::to_string(archives->value("count", 0LL)) + " archives (" +
                std::to_string(archives->value("bytes", 0LL)) + " of " +
                std::to_string(archives->value("max_bytes", 0LL)) + " bytes), " +
                std::to_string(archives->value("hits", 0LL)) + " archive hits, " +
                std::to_string(archives->value("downloads", 0LL)) + " downloads";
        if (const std::string problem = text_of(*archives, "store_problem", ""); !problem.empty()) {
            line += "; " + problem + " (" + std::to_string(archives->value("passed_through", 0LL)) +
                    " so far)";
        }
    }
    return line;
}

}  // namespace hostkeeper::helper::cli
