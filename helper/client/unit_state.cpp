#include "helper/client/unit_state.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "helper/client/subprocess.hpp"

namespace hostkeeper::helper::client {
namespace fs = std::filesystem;

namespace {

// systemd's own exit statuses for a failed start, as systemctl status names
// them (systemd-analyze exit-status, systemd 252).
const char* systemd_exit_status_name(int status) {
    static const std::pair<int, const char*> names[] = {
        {200, "CHDIR"},
        {201, "NICE"},
        {202, "FDS"},
        {203, "EXEC"},
        {204, "MEMORY"},
        {205, "LIMITS"},
        {206, "OOM_ADJUST"},
        {207, "SIGNAL_MASK"},
        {208, "STDIN"},
        {209, "STDOUT"},
        {210, "CHROOT"},
        {211, "IOPRIO"},
        {212, "TIMERSLACK"},
        {213, "SECUREBITS"},
        {214, "SETSCHEDULER"},
        {215, "CPUAFFINITY"},
        {216, "GROUP"},
        {217, "USER"},
        {218, "CAPABILITIES"},
        {219, "CGROUP"},
        {220, "SETSID"},
        {221, "CONFIRM"},
        {222, "STDERR"},
        {224, "PAM"},
        {225, "NETWORK"},
        {226, "NAMESPACE"},
        {227, "NO_NEW_PRIVILEGES"},
        {228, "SECCOMP"},
        {229, "SELINUX_CONTEXT"},
        {230, "PERSONALITY"},
        {231, "APPARMOR"},
        {232, "ADDRESS_FAMILIES"},
        {233, "RUNTIME_DIRECTORY"},
        {235, "CHOWN"},
        {236, "SMACK_PROCESS_LABEL"},
        {237, "KEYRING"},
        {242, "NUMA_POLICY"},
        {243, "CREDENTIALS"},
        {244, "BPF"},
    };
    for (const auto& [number, name] : names) {
        if (number == status) return name;
    }
    return nullptr;
}

int to_int(const std::string& text) {
    char* end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    return end != text.c_str() ? static_cast<int>(value) : 0;
}

// Runs `systemctl --user show -p ... hostkeeperd.socket hostkeeperd.service`
// and returns its stdout; nullopt when it fails or takes longer than `limit`.
std::optional<std::string> systemctl_show(std::chrono::milliseconds limit) {
    const std::string properties =
        "Id,LoadState,ActiveState,SubState,Result,UnitFileState,ExecMainCode,ExecMainStatus";
    const Captured shown = run_captured(
        {"systemctl", "--user", "--no-pager", "show", "-p", properties, kSocketUnit, kServiceUnit},
        limit);
    if (shown.timed_out || shown.status != 0) return std::nullopt;
    return shown.out;
}

std::string problem_fix(const UnitsState& units) {
    std::string fix;
    const UnitState& service = units.service;
    if (service.exec_main_code == 1) {
        const int status = service.exec_main_status;
        if (status == 218 || status == 226) {
            fix =
                "the unit's sandbox needs unprivileged user namespaces (PrivateUsers=): allow "
                "them, or "
                "upgrade hostkeeper if its unit predates that, or run 'systemctl --user disable "
                "--now " +
                std::string(kSocketUnit) +
                "' and let the helper start hostkeeperd on demand; then ";
        } else if (status == 203) {
            fix =
                "hostkeeperd is not where the unit's ExecStart= says (reinstall hostkeeper); then ";
        } else if (status > 0 && status < 200) {
            fix = "hostkeeperd refused to start: 'journalctl --user -u " +
                  std::string(kServiceUnit) +
                  "' or 'hostkeeperd --log-level debug' in a terminal says why (often "
                  "~/.config/hostkeeper/config.toml); then ";
        }
    }
    if (fix.empty()) {
        fix = "'systemctl --user status " + std::string(kServiceUnit) +
              "' and 'journalctl --user -u " + kServiceUnit + "' say why; once that is fixed, ";
    }
    return fix + "run 'systemctl --user reset-failed " + kSocketUnit + " " + kServiceUnit +
           "' and 'systemctl --user restart " + kSocketUnit + "' (or 'hostkeeper setup')";
}

}  // namespace

bool user_manager_running() {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime == nullptr || runtime[0] != '/') return false;
    return ::access((std::string(runtime) + "/systemd/private").c_str(), F_OK) == 0;
}

UnitsState parse_units_state(const std::string& show_output) {
    // One block per unit, separated by an empty line; systemctl orders the
    // properties its own way, so Id= may come anywhere in its block.
    UnitsState units;
    UnitState unit;
    std::string id;
    const auto finish = [&] {
        if (id == kSocketUnit) units.socket = unit;
        if (id == kServiceUnit) units.service = unit;
        unit = UnitState{};
        id.clear();
    };
    // Line by line, as std::getline would (no iostreams in the helper:
    // helper_arguments.hpp says why).
    std::size_t start = 0;
    while (start < show_output.size()) {
        const auto end = show_output.find('\n', start);
        const std::string line =
            show_output.substr(start, end == std::string::npos ? std::string::npos : end - start);
        start = end == std::string::npos ? show_output.size() : end + 1;
        if (line.empty()) {
            finish();
            continue;
        }
        const auto equals = line.find('=');
        if (equals == std::string::npos) continue;
        const std::string key = line.substr(0, equals);
        const std::string value = line.substr(equals + 1);
        if (key == "Id") {
            id = value;
        } else if (key == "LoadState") {
            unit.load_state = value;
        } else if (key == "ActiveState") {
            unit.active_state = value;
        } else if (key == "SubState") {
            unit.sub_state = value;
        } else if (key == "Result") {
            unit.result = value;
        } else if (key == "UnitFileState") {
            unit.unit_file_state = value;
        } else if (key == "ExecMainCode") {
            unit.exec_main_code = to_int(value);
        } else if (key == "ExecMainStatus") {
            unit.exec_main_status = to_int(value);
        }
    }
    finish();
    return units;
}

std::optional<UnitsState> query_units() {
    if (!user_manager_running()) return std::nullopt;
    const auto out = systemctl_show(std::chrono::milliseconds(3000));
    if (!out) return std::nullopt;
    return parse_units_state(*out);
}

std::string describe_exit(const UnitState& service) {
    const int status = service.exec_main_status;
    if (service.exec_main_code == 1) {
        const char* name = systemd_exit_status_name(status);
        return "status=" + std::to_string(status) +
               (name != nullptr ? std::string("/") + name : "");
    }
    if (service.exec_main_code == 2 || service.exec_main_code == 3) {
        const char* name = ::sigabbrev_np(status);
        return std::string("signal ") +
               (name != nullptr ? std::string("SIG") + name : std::to_string(status)) +
               (service.exec_main_code == 3 ? " (core dumped)" : "");
    }
    return "";
}

std::optional<UnitProblem> unit_problem(const UnitsState& units) {
    const UnitState& socket = units.socket;
    const UnitState& service = units.service;
    if (socket.load_state != "loaded") return std::nullopt;
    const bool service_failed = service.result != "success" && !service.result.empty();
    std::string why;  // "exit-code, status=203/EXEC"
    if (service_failed) {
        const std::string exit = describe_exit(service);
        why = service.result + (exit.empty() ? "" : ", " + exit);
    }
    if (socket.active_state == "failed") {
        return UnitProblem{std::string(kSocketUnit) + " failed (" + socket.result + ")" +
                               (why.empty() ? "" : ": " + std::string(kServiceUnit) + " " + why),
                           problem_fix(units)};
    }
    if (service.active_state == "failed" && service_failed) {
        return UnitProblem{std::string(kServiceUnit) + " failed (" + why + ")", problem_fix(units)};
    }
    if (service.sub_state == "auto-restart" && service_failed) {
        return UnitProblem{std::string(kServiceUnit) + " keeps failing (" + why + ")",
                           problem_fix(units)};
    }
    return std::nullopt;
}

void warn_if_units_failed(const fs::path& socket) {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime == nullptr || runtime[0] != '/') return;
    if (socket != fs::path(runtime) / "hostkeeper" / "socket") return;  // not the unit's socket
    const auto units = query_units();
    if (!units) return;
    const auto problem = unit_problem(*units);
    if (!problem) return;
    std::fprintf(stderr, "hostkeeper: %s; starting hostkeeperd without systemd for now. Fix: %s\n",
                 problem->what.c_str(), problem->fix.c_str());
}

}  // namespace hostkeeper::helper::client
