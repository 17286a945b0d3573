#pragma once
// The process that stands for a run's COMMAND: it is the subreaper of
// COMMAND and of everything COMMAND starts, and exits once none of them is
// left, with COMMAND's status. Processes that outlive a run on purpose are
// not waited for: a hostkeeperd started on demand by a client within the
// run (it serves other runs and clients, and exits when idle). SIGINT,
// SIGTERM and SIGHUP sent to it go to COMMAND, except a terminal's, which
// reached COMMAND itself (Terraform takes a second ^C as "stop now").

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace hostkeeper::helper::cli {

// Forks the reaper, which runs `argv` with `envp` (execvpe) and the signal
// mask `previous`; the caller's mask must block SIGCHLD, SIGINT, SIGTERM
// and SIGHUP. `close_fds`: the caller's descriptors the reaper must not hold.
// The reaper's pid; -1 (errno set) when fork failed.
pid_t start_reaper(const std::vector<std::string>& argv, const std::vector<std::string>& envp,
                   const sigset_t& previous, const std::vector<int>& close_fds);

// The exit status for a wait status: the code, or 128+N for signal N.
int exit_status(int raw);

}  // namespace hostkeeper::helper::cli
