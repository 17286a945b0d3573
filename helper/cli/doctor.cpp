#include "helper/cli/doctor.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "helper/cli/check.hpp"
#include "helper/cli/command.hpp"
#include "helper/cli/containers_config.hpp"
#include "helper/cli/git_config.hpp"
#include "helper/cli/keyring_cli.hpp"
#include "helper/cli/list.hpp"
#include "helper/cli/pass_doctor.hpp"
#include "helper/cli/registry_cache_doctor.hpp"
#include "helper/cli/run_directories.hpp"
#include "helper/client/common_cli.hpp"
#include "helper/client/exit_codes.hpp"
#include "helper/client/launcher.hpp"
#include "helper/client/printable_output.hpp"
#include "helper/client/subprocess.hpp"
#include "helper/client/unit_state.hpp"
#include "helper/terraform_config/cli_config.hpp"
#include "helper/terraform_config/plaintext_credentials.hpp"
#include "helper/terraform_config/shadowing.hpp"
#include "helper/terraform_config/tool_locations.hpp"
#include "proto/error.hpp"
#include "proto/file_io.hpp"
#include "proto/hostname.hpp"
#include "proto/session_bus.hpp"
#include "proto/version.hpp"

namespace hostkeeper::helper::cli {
namespace fs = std::filesystem;
using proto::ErrorCode;
using proto::Json;

namespace {

// The host doctor stores a probe item for; .invalid is never a real registry.
constexpr const char* kProbeHost = "hostkeeper-doctor.invalid";

// How the daemon says that the keyring is locked, whatever it was doing.
constexpr const char* kKeyringLocked = "the keyring is locked";

class Report {
  public:
    void ok(const std::string& what) {
        client::print_printable(stdout, "ok    %s\n", what.c_str());
    }
    void skip(const std::string& what) {
        client::print_printable(stdout, "skip  %s\n", what.c_str());
    }
    void warn(const std::string& what) {
        client::print_printable(stdout, "warn  %s\n", what.c_str());
    }
    void note(const std::string& what) {
        client::print_printable(stdout, "      %s\n", what.c_str());
    }
    void fail(const std::string& what, const std::string& fix) {
        ++failures_;
        failed_.push_back(what);
        client::print_printable(stdout, "FAIL  %s; fix: %s\n", what.c_str(), fix.c_str());
    }
    int failures() const { return failures_; }
    // Whether a failure printed before holds `message` (an error seen twice
    // is told once).
    bool told(const std::string& message) const {
        return std::any_of(failed_.begin(), failed_.end(), [&](const std::string& what) {
            return what.find(message) != std::string::npos;
        });
    }

  private:
    int failures_ = 0;
    std::vector<std::string> failed_;
};

std::string setup_command(const terraform_config::ToolPaths& paths) {
    return std::string("hostkeeper setup ") +
           (paths.tool == terraform_config::Tool::terraform ? "--terraform" : "--opentofu");
}

void check_helper(Report& report, const terraform_config::ToolPaths& paths) {
    std::error_code ec;
    const fs::path installed = fs::weakly_canonical(terraform_config::installed_helper(), ec);
    for (const auto& dir : paths.plugin_dirs) {
        const fs::path link = dir / terraform_config::kHelperName;
        if (::access(link.c_str(), X_OK) == 0) {
            const fs::path runs = fs::weakly_canonical(link, ec);
            if (runs != installed) {
                report.fail(
                    paths.name + " runs " + runs.string() + " through " + link.string() +
                        ", not the installed helper " + installed.string(),
                    setup_command(paths) + " (it replaces a symlink), or remove the stale copy");
            } else {
                report.ok(paths.name + " finds the helper at " + link.string());
            }
            return;
        }
        if (fs::is_symlink(fs::symlink_status(link, ec))) {
            report.fail(link.string() + " is a broken symlink (to " +
                            fs::read_symlink(link, ec).string() + ")",
                        setup_command(paths));
            return;
        }
        if (fs::exists(link, ec)) {
            report.fail(link.string() + " is not executable", "chmod 755 " + link.string());
            return;
        }
    }
    report.fail(paths.name + " looks for " + terraform_config::kHelperName + " in " +
                    paths.plugin_dirs.front().string() + " and it is not there (" + paths.name +
                    " then ignores credentials_helper without a word)",
                setup_command(paths));
}

void check_config(Report& report, const terraform_config::ToolPaths& paths) {
    std::vector<terraform_config::ScannedFile> files;
    try {
        files = terraform_config::scan_cli_config_files(paths);
    } catch (const std::exception& e) {
        report.fail(paths.name + ": cannot read its CLI configuration: " + e.what(),
                    "correct the file");
        return;
    }
    std::vector<std::string> ours;
    int conflicts = 0;
    for (const auto& file : files) {
        for (const auto& block : file.scan.helpers) {
            const std::string where = file.path.string() + ":" + std::to_string(block.line);
            if (block.label == terraform_config::kHelperLabel) {
                ours.push_back(where);
                continue;
            }
            ++conflicts;
            report.fail(where + ": credentials_helper \"" + block.label + "\" is configured for " +
                            paths.name,
                        "remove that block: " + paths.name +
                            " allows one credentials_helper, and it must be " + "hostkeeper's");
        }
    }
    if (ours.empty()) {
        report.fail(paths.name + " reads " + paths.cli_config.string() +
                        ", which has no credentials_helper \"hostkeeper\" block",
                    setup_command(paths));
    } else if (ours.size() > 1) {
        ++conflicts;
        report.fail(paths.name + ": more than one credentials_helper block (" + ours[0] + ", " +
                        ours[1] + ")",
                    "keep one of them");
    } else {
        report.ok(paths.name + " reads credentials_helper \"hostkeeper\" at " + ours[0]);
    }
    if (conflicts == 0) report.ok(paths.name + ": no other credentials_helper configured");
}

void check_shadowing(Report& report) {
    int found = 0;
    for (const auto& path : terraform_config::credentials_file_paths()) {
        std::error_code ec;
        if (!fs::exists(path, ec)) continue;
        try {
            const terraform_config::CredentialsFile file(path);
            const auto hosts = file.hosts();
            if (hosts.empty()) continue;
            ++found;
            std::string list;
            for (const auto& host : hosts) list += (list.empty() ? "" : ", ") + host;
            report.fail(path.string() + " holds tokens for " + list + ", which shadow the keyring",
                        "hostkeeper import");
        } catch (const proto::FileError& e) {
            ++found;
            report.fail(e.what(), "repair or remove the file");
        }
    }
    std::vector<std::string> errors;
    for (const auto& block : terraform_config::credentials_blocks(&errors)) {
        ++found;
        report.fail(block.where + ": credentials \"" + block.host + "\" block shadows the keyring",
                    "store its token in the keyring (terraform login " + block.host +
                        " once the block is gone) and delete the block");
    }
    for (const auto& error : errors) {
        ++found;
        report.fail("cannot scan " + error, "correct the file");
    }
    if (found == 0) report.ok("no credentials.tfrc.json or credentials block shadows the keyring");

    const auto variables = terraform_config::token_variables();
    for (const auto& variable : variables) {
        const std::string unset =
            "unset " + variable.name + " (and remove it from your shell's start-up files)";
        if (!variable.host) {
            report.warn(variable.name +
                        " is set in the environment but names no valid host; Terraform and "
                        "OpenTofu ignore it");
            continue;
        }
        report.fail(variable.name + " is set in the environment and shadows the keyring for " +
                        *variable.host,
                    unset +
                        "; 'hostkeeper exec -- COMMAND' gives a command the keyring's "
                        "tokens as TF_TOKEN_* variables");
    }
    if (variables.empty()) report.ok("no TF_TOKEN_* variables in the environment");
}

void check_socket_directory(Report& report, const client::ClientOptions& client) {
    const proto::SocketLocation location = socket_location(client);
    try {
        proto::check_private_directory(location.directory, ::geteuid());
        report.ok("socket directory " + location.directory.string() + " is yours with mode 0700");
    } catch (const proto::UnsafeSocket& e) {
        report.fail(e.what(),
                    "chmod 700 " + location.directory.string() +
                        " if it is yours; otherwise remove it, or set HOSTKEEPER_SOCKET elsewhere");
    } catch (const fs::filesystem_error&) {
        report.ok("socket directory " + location.directory.string() +
                  " does not exist yet; hostkeeperd creates it with mode 0700");
    }
}

bool installed(const char* path) {
    return ::access(path, F_OK) == 0;
}

// What is missing, judged from this machine: never "install" what is there.
std::string keyring_unavailable_fix() {
    if (proto::session_bus_address().empty()) {
        return installed("/usr/lib/systemd/user/dbus.service")
                   ? "this session has no D-Bus session bus: log in again (a login through "
                     "pam_systemd starts "
                     "one), or set DBUS_SESSION_BUS_ADDRESS; then 'hostkeeper stop'"
                   : "this session has no D-Bus session bus: install dbus-user-session and log in "
                     "again";
    }
    return installed("/usr/bin/gnome-keyring-daemon")
               ? "nothing provides the Secret Service on your session bus: log in to the desktop "
                 "(it starts "
                 "gnome-keyring), or run 'gnome-keyring-daemon --start --components=secrets', or "
                 "enable "
                 "KeePassXC's Secret Service integration"
               : "install gnome-keyring (or enable KeePassXC's Secret Service integration) and log "
                 "in again";
}

std::string keyring_fix(ErrorCode code) {
    switch (code) {
        case ErrorCode::keyring_locked:
            return "unlock the keyring (Seahorse, or log in to the desktop session)";
        case ErrorCode::keyring_unavailable:
            return keyring_unavailable_fix();
        case ErrorCode::no_default_collection:
            return "create a default keyring (Seahorse: a new password keyring, then \"Set as "
                   "default\")";
        default:
            return "see the message; 'hostkeeperd --log-level debug' in a terminal shows more";
    }
}

// Whether hostkeeperd.service is how hostkeeperd runs here (its sandbox applies).
bool runs_in_unit() {
    if (!client::user_manager_running()) return false;
    const auto units = client::query_units();
    return units && units->socket.load_state == "loaded" &&
           (units->socket.unit_file_state == "enabled" || units->socket.active_state == "active");
}

// hostkeeperd's own configuration, read as the daemon would read it now:
// a running daemon may have started before the file was broken. False when
// it cannot run with it (later checks then point back here: one fix).
bool check_daemon_config(Report& report) {
    fs::path daemon;
    try {
        daemon = client::find_daemon_executable();
    } catch (const client::NoDaemon& e) {
        report.fail(e.what(), "install hostkeeper (hostkeeperd belongs next to this program)");
        return false;
    }
    const client::Captured checked =
        client::run_captured({daemon.string(), "--check-config"}, std::chrono::seconds(10), true);
    constexpr std::string_view kPrefix = "hostkeeperd: ";
    constexpr std::string_view kWarning = "warning: ";
    std::string said;
    std::istringstream lines(checked.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(kPrefix, 0) == 0) line.erase(0, kPrefix.size());
        if (line.rfind(kWarning, 0) != 0) {
            said += (said.empty() ? "" : "; ") + line;
            continue;
        }
        line.erase(0, kWarning.size());
        // Valid where doctor runs, not where the unit runs the daemon.
        if (checked.status == 0 && runs_in_unit()) {
            report.fail("hostkeeperd.service cannot use its configuration: " + line,
                        "move the file under your home, point the setting at it, then "
                        "'hostkeeper stop'");
        } else {
            report.warn(line);
        }
    }
    if (checked.status == 0) {
        report.ok("hostkeeperd: " + said);
        return true;
    }
    report.fail("hostkeeperd cannot run: " + said,
                "fix the file (see hostkeeper.toml(5)), then 'hostkeeper stop' so that the next "
                "request starts a daemon that reads it");
    return false;
}

bool check_daemon(Report& report, client::ClientOptions client, bool config_valid) {
    client.start_daemon = true;  // as the helper would
    try {
        client::DaemonClient daemon(client);
        const Json hello = daemon.call(proto::make_request(proto::Op::hello));
        const std::string version = hello.value("daemon_version", "?");
        report.ok("hostkeeperd " + version + " answers at " + daemon.location().socket.string());
        if (version == proto::product_version()) {
            report.ok(std::string("hostkeeperd and the helper are the same version (") +
                      proto::product_version() + ")");
        } else {
            report.fail(
                "hostkeeperd is version " + version + ", the helper " + proto::product_version(),
                "hostkeeper stop (the next request starts the installed hostkeeperd)");
        }
        return true;
    } catch (const proto::Error& e) {
        if (e.code() == ErrorCode::config_error && !config_valid) {
            report.skip("hostkeeperd answers every request with the configuration error above");
            return false;
        }
        report.fail(std::string("hostkeeperd does not answer: ") + e.what(),
                    "run 'hostkeeperd --log-level debug' in a terminal to see why");
        return false;
    } catch (const std::exception& e) {
        if (!config_valid) {
            report.skip("hostkeeperd cannot start with the configuration error above");
            return false;
        }
        report.fail(std::string("hostkeeperd does not answer: ") + e.what(),
                    "run 'hostkeeperd --log-level debug' in a terminal to see why");
        return false;
    }
}

void check_keyring(Report& report, const client::ClientOptions& client) {
    Json store = proto::make_request(proto::Op::store);
    store["host"] = kProbeHost;
    store["credentials"] = Json{{"token", "hostkeeper doctor probe"}};
    Json get = proto::make_request(proto::Op::get);
    get["host"] = kProbeHost;
    Json forget = proto::make_request(proto::Op::forget);
    forget["host"] = kProbeHost;
    try {
        client::DaemonClient(client).call(store);
        const Json answer = client::DaemonClient(client).call(get);
        client::DaemonClient(client).call(forget);
        if (!answer.value("found", false) || answer["credentials"] != store["credentials"]) {
            report.fail("the keyring gave back something else than the probe item stored in it",
                        "report this; 'hostkeeperd --log-level debug' shows the keyring calls");
            return;
        }
        report.ok(
            "the Secret Service stores and gives back items: the default collection is there and "
            "unlocked");
    } catch (const proto::Error& e) {
        report.fail(std::string("the keyring: ") + e.what(), keyring_fix(e.code()));
    } catch (const std::exception& e) {
        report.fail(std::string("the keyring: ") + e.what(), keyring_fix(ErrorCode::internal));
    }
}

// The backend the daemon chose and why (status's keyring object), then the
// checks of that backend. A daemon from before the pass backend says
// nothing: it uses the Secret Service.
void check_backend(Report& report, const client::ClientOptions& client) {
    Json keyring;
    try {
        const Json status =
            client::DaemonClient(client).call(proto::make_request(proto::Op::status));
        if (const auto it = status.find("keyring"); it != status.end() && it->is_object())
            keyring = *it;
    } catch (const std::exception& e) {
        report.fail(std::string("hostkeeperd does not answer status: ") + e.what(),
                    "run 'hostkeeperd --log-level debug' in a terminal to see why");
        return;
    }
    if (keyring.is_null()) {
        check_keyring(report, client);
        return;
    }
    const auto lines = keyring_status_lines(keyring);
    const auto backend = keyring.find("backend");
    if (backend == keyring.end() || !backend->is_string()) {
        report.fail(lines.front(),
                    "set up either: pass (gpg --quick-gen-key \"Your Name <you@example.com>\", "
                    "then pass init KEYID), or the Secret Service: " +
                        keyring_unavailable_fix());
    } else {
        report.ok(lines.front());
    }
    for (std::size_t i = 1; i < lines.size(); ++i)
        report.note(lines[i].substr(lines[i].find_first_not_of(' ')));
    if (backend == keyring.end() || !backend->is_string()) return;
    if (*backend == "pass") {
        check_pass(
            {[&](const std::string& what) { report.ok(what); },
             [&](const std::string& what) { report.warn(what); },
             [&](const std::string& what, const std::string& fix) { report.fail(what, fix); }},
            client, keyring);
    } else {
        check_keyring(report, client);
    }
}

// A check that failed because the registry's certificate is not trusted.
bool tls_failure(const std::string& text) {
    return text.find("SSL") != std::string::npos || text.find("certificate") != std::string::npos;
}
constexpr const char* kTlsFix =
    "fix: hostkeeperd does not trust the registry's CA: put it in a PEM file under your home, "
    "set discovery.ca_file to it in ~/.config/hostkeeper/config.toml (hostkeeper.toml(5)), then "
    "'hostkeeper stop'";

// A warning per stored expiry within 30 days (an expired one is the
// check's failure).
void warn_of_expiries(Report& report, const Json& listed) {
    const auto entries = listed.find("hosts");
    if (entries == listed.end() || !entries->is_array()) return;
    for (const auto& entry : *entries) {
        if (!entry.is_object()) continue;
        // Hosts without a stored expiry have "expiry_stage": null.
        const auto stage = entry.find("expiry_stage");
        if (stage != entry.end() && stage->is_string() && *stage == "expired") continue;
        if (const std::string warning = expiry_warning(entry); !warning.empty())
            report.warn(warning);
    }
}

// One line per stored host: its token asked for at its own host (check),
// then the stored expiries near, then the hosts that refused the daemon's
// own requests with their token.
void check_stored_tokens(Report& report, const client::ClientOptions& client) {
    Json listed;
    try {
        listed = list_answer(client);
    } catch (const proto::Error& e) {
        if (e.code() == ErrorCode::unknown_op) {
            report.warn(std::string("stored tokens not checked: ") + e.what());
            return;
        }
        if (report.told(e.what()) ||
            (e.code() == ErrorCode::keyring_locked && report.told(kKeyringLocked))) {
            report.skip("stored tokens not checked: the keyring's failure above");
            return;
        }
        report.fail(std::string("cannot list the stored hosts: ") + e.what(),
                    keyring_fix(e.code()));
        return;
    } catch (const std::exception& e) {
        report.fail(std::string("cannot list the stored hosts: ") + e.what(),
                    keyring_fix(ErrorCode::internal));
        return;
    }
    const auto hosts = listed_hosts(listed);
    if (hosts.empty()) report.ok("no credentials stored in the keyring: no token to check");
    for (const auto& host : hosts) {
        CheckLine line;
        try {
            line = check_line(check_host(client, host));
        } catch (const std::exception& e) {
            report.warn(std::string("stored tokens not checked: ") + e.what());
            return;
        }
        switch (line.verdict) {
            case Verdict::good:
                report.ok("token for " + line.text);
                break;
            case Verdict::rejected:
                report.fail("token for " + line.text,
                            "terraform login " + proto::display_hostname(host));
                break;
            case Verdict::failed:
                if (report.told(kKeyringLocked)) {
                    report.skip("token for " + proto::display_hostname(host) +
                                " not checked: the keyring is locked (above)");
                    break;
                }
                report.warn("token for " + line.text);
                if (tls_failure(line.text)) report.note(kTlsFix);
                break;
            case Verdict::unchecked:
            case Verdict::absent:
                report.skip("token for " + line.text);
                break;
        }
    }
    warn_of_expiries(report, listed);
    if (const auto rejected = listed.find("rejected");
        rejected != listed.end() && rejected->is_array()) {
        for (const auto& entry : *rejected) {
            const std::string host = entry.value("host", "?");
            report.warn(
                host_for_people(host) + " refused hostkeeperd's requests with its token (HTTP " +
                std::to_string(entry.value("status", 0)) + " from " + entry.value("url", "?") +
                ", " + client::duration_text(entry.value("age_s", 0LL)) +
                " ago): it is not handed out until a new token is stored (terraform login " +
                proto::display_hostname(host) + "), hostkeeper check finds it valid, or " +
                "hostkeeper flush forgets the refusal");
        }
    }
}

// After check_daemon: its request is what makes systemd start the service,
// so a unit that cannot start has failed by now (the helper then started
// hostkeeperd on demand, which answered).
void check_units(Report& report) {
    if (!client::user_manager_running()) {
        report.ok("systemd: no user manager runs; the helper starts hostkeeperd on demand");
        return;
    }
    const auto units = client::query_units();
    if (!units) {
        report.fail("systemd: 'systemctl --user show' did not answer",
                    "check the user manager: systemctl --user status");
        return;
    }
    if (units->socket.load_state != "loaded") {
        report.ok(std::string("systemd: ") + client::kSocketUnit + " is not installed (" +
                  units->socket.load_state + "); the helper starts hostkeeperd on demand");
        return;
    }
    if (const auto problem = client::unit_problem(*units)) {
        report.fail("systemd: " + problem->what, problem->fix);
        return;
    }
    if (units->socket.unit_file_state == "enabled" && units->socket.active_state != "active") {
        // Enabled but not started (e.g. the package was reinstalled): the
        // helper starts hostkeeperd on demand, outside the unit's sandbox.
        report.warn(std::string("systemd: ") + client::kSocketUnit + " is enabled but " +
                    units->socket.active_state +
                    ": hostkeeperd runs on demand, outside its sandbox; fix: systemctl --user "
                    "start " +
                    client::kSocketUnit + " (or hostkeeper setup)");
        return;
    }
    if (units->socket.active_state == "active") {
        report.ok(std::string("systemd: ") + client::kSocketUnit + " is " +
                  units->socket.unit_file_state + " and listening; " + client::kServiceUnit +
                  " is " + units->service.active_state);
    } else {
        report.ok(
            std::string("systemd: ") + client::kSocketUnit + " is " +
            units->socket.unit_file_state + " and " + units->socket.active_state +
            "; the helper starts hostkeeperd on demand (hostkeeper setup enables the socket)");
    }
}

}  // namespace

int run_doctor(const client::ClientOptions& client) {
    Report report;
    bool any_tool = false;
    for (const terraform_config::Tool tool :
         {terraform_config::Tool::terraform, terraform_config::Tool::opentofu}) {
        const terraform_config::ToolPaths paths = terraform_config::locate(tool);
        if (!terraform_config::tool_present(paths)) {
            report.skip(paths.name + ": not found (`" + paths.command +
                        "` not on PATH, no configuration of its own)");
            continue;
        }
        any_tool = true;
        check_helper(report, paths);
        check_config(report, paths);
    }
    if (!any_tool) {
        report.fail("neither Terraform nor OpenTofu was found (not on PATH, no configuration)",
                    "install one, or run hostkeeper setup --terraform to prepare for it");
    }
    check_shadowing(report);
    check_socket_directory(report, client);
    const bool config_valid = check_daemon_config(report);
    const bool daemon_answers = check_daemon(report, client, config_valid);
    if (daemon_answers) {
        check_backend(report, client);
        check_stored_tokens(report, client);
    }
    if (!client.socket) check_units(report);  // the units serve only the default socket
    const DoctorSink sink{
        [&](const std::string& what) { report.ok(what); },
        [&](const std::string& what) { report.warn(what); },
        [&](const std::string& what, const std::string& fix) { report.fail(what, fix); },
        [&](const std::string& what) { report.skip(what); }};
    check_registry_cache(sink, client, daemon_answers, config_valid);
    check_git(sink);
    check_containers(sink);
    if (report.failures() > 0) {
        client::print_printable(stdout, "%d check(s) failed\n", report.failures());
        return client::kExitFailed;
    }
    client::print_printable(stdout, "all checks passed\n");
    return client::kExitOk;
}

namespace {

class DoctorCommand final : public Command {
  public:
    CLI::App* add_to(CLI::App& app) override {
        return app.add_subcommand(
            "doctor",
            "check that Terraform and OpenTofu will use the keyring; say how to fix what fails");
    }
    // It reports on the daemon, and starts one only for the checks that need it.
    bool starts_daemon() const override { return false; }
    int run(const client::ClientOptions& client) override { return run_doctor(client); }
};

}  // namespace

std::unique_ptr<Command> doctor_command() {
    return std::make_unique<DoctorCommand>();
}

}  // namespace hostkeeper::helper::cli
