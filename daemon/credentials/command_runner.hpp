#pragma once
// Running a token command: its argv (no shell) as the daemon's user, stdin
// /dev/null, standard output captured up to kMaxCommandOutput, the first line
// of standard error kept for the error message, in a process group of its
// own that is killed when the time is up, until none of it is left. The
// program must be trusted (file_trust: find_trusted_program) or it is not
// started. Blocking: call it on a worker thread. Under a systemd user
// manager the command runs in a transient unit of its own (systemd-run
// --user), outside hostkeeperd.service's sandbox: there hostkeeperd itself
// (exec_trusted_command) finds and checks the program, outside the unit's
// user namespace, and executes it; on timeout the unit is stopped.
// Nothing here logs what the command printed.

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/credentials/token_command_options.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::daemon::credentials {

struct CommandRun {
    std::string launch_error;  // not empty: the command could not be started
    bool timed_out = false;
    bool too_much_output = false;
    int exit_code = -1;            // when it exited
    int signal = 0;                // when a signal ended it
    proto::Secret output;          // standard output
    std::string first_error_line;  // standard error's first line, at most 512 bytes
    std::string left_behind;       // not empty: what of it could not be ended after a timeout
};

// The process groups of the commands running now, so that a stopping daemon
// leaves none behind. Thread-safe.
class RunningCommands {
  public:
    // How long stop() waits for the groups to end after SIGTERM before SIGKILL.
    static constexpr std::chrono::seconds kStopGrace{2};

    // False once stop() has been called: the caller ends `group` itself.
    // `unit`: the transient unit the command runs in, if any.
    bool add(pid_t group, const std::string& unit = {});
    void remove(pid_t group);
    // SIGTERM to every running command's group, SIGKILL to those still
    // running kStopGrace later, and a stop of their transient units; no
    // command starts after it.
    void stop();
    bool stopped() const;

  private:
    mutable std::mutex mutex_;
    std::map<pid_t, std::string> groups_;
    bool stopped_ = false;
};

// Blocking; never throws for what the command does. `running`, when given,
// holds the command's process group while it runs.
CommandRun run_token_command(const TokenCommand& command, RunningCommands* running = nullptr);

// The argv that runs `command` through the user manager: systemd-run around
// `self` (hostkeeperd) with kExecTrustedOption and the command's argv, in the
// transient unit `unit`. `environment_names`: the variables the transient
// unit takes from the daemon's environment (systemd-run -E NAME).
std::vector<std::string> launch_argv(const TokenCommand& command, const std::string& self,
                                     const std::string& unit,
                                     const std::vector<std::string>& environment_names);

// hostkeeperd's first argument that makes it exec_trusted_command.
inline constexpr const char* kExecTrustedOption = "--exec-token-command";
// exec_trusted_command's exit status and first line of standard error when
// it refuses the program.
inline constexpr int kRefusedExit = 126;
inline constexpr const char* kRefusedPrefix = "hostkeeperd: token_command refused: ";

// Finds and checks argv[0] (find_trusted_program, in $PATH) and executes it
// with `argv`: returns only when it refused or could not (kRefusedExit, why
// written to standard error after kRefusedPrefix), or 127.
int exec_trusted_command(int argc, char** argv);

// Whether the daemon runs under a systemd user manager that can start a
// transient unit: $INVOCATION_ID set, the manager's private socket there,
// and systemd-run installed.
bool user_manager_reachable();

}  // namespace hostkeeper::daemon::credentials
