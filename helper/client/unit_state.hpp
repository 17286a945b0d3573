#pragma once
// What the user's systemd manager says about hostkeeperd.socket and
// hostkeeperd.service: did they fail, hit the start limit, and why. Asked
// through `systemctl --user show` (no libsystemd in the helper), so only on
// slow or failure paths: never when the daemon answers.

#include <filesystem>
#include <optional>
#include <string>

namespace hostkeeper::helper::client {

inline constexpr const char* kSocketUnit = "hostkeeperd.socket";
inline constexpr const char* kServiceUnit = "hostkeeperd.service";

// True when $XDG_RUNTIME_DIR/systemd/private exists: a user manager runs.
bool user_manager_running();

// One unit's properties, as `systemctl --user show` gives them.
struct UnitState {
    std::string load_state;    // loaded, not-found, masked, ...
    std::string active_state;  // active, inactive, failed, activating, ...
    std::string sub_state;     // listening, running, dead, auto-restart, ...
    std::string result;        // success, exit-code, start-limit-hit, service-start-limit-hit, ...
    std::string unit_file_state;  // enabled, disabled, static, ... (empty when unknown)
    int exec_main_code = 0;    // the main process: 1 exited, 2 killed, 3 dumped core (service only)
    int exec_main_status = 0;  // its exit status or signal
};

struct UnitsState {
    UnitState socket;
    UnitState service;
};

// Parses `systemctl show -p ... UNIT...` output (blocks of KEY=VALUE, one per
// unit, told apart by Id=).
UnitsState parse_units_state(const std::string& show_output);

// Both units' state; nullopt when no user manager runs or systemctl did not
// answer within a couple of seconds.
std::optional<UnitsState> query_units();

struct UnitProblem {
    std::string what;  // what failed, with systemd's reason (e.g. "status=218/CAPABILITIES")
    std::string fix;   // what to run
};

// A failed or start-limited socket or service, or a service caught in
// restarts; nullopt when the units are fine, inactive or not installed.
std::optional<UnitProblem> unit_problem(const UnitsState& units);

// "status=218/CAPABILITIES", "status=1", "signal SIGSEGV": how the main
// process of a service ended.
std::string describe_exit(const UnitState& service);

// The helper's hook, called only when no daemon answered and one is about to
// be started on demand: when `socket` is the one hostkeeperd.socket listens
// on and the user manager says the units failed, says so on stderr (why, and
// the fix), so that a broken unit is never replaced silently.
void warn_if_units_failed(const std::filesystem::path& socket);

}  // namespace hostkeeper::helper::client
