#pragma once
// Running another program to completion, bounded in time, and keeping what it
// printed: `systemctl --user show` for the unit's state, `hostkeeperd
// --check-config` for doctor; or attached to the terminal (gpg for
// `hostkeeper unlock`).

#include <chrono>
#include <string>
#include <vector>

namespace hostkeeper::helper::client {

struct Captured {
    int status = 127;  // exit status; 128+N when killed by signal N; 127 when it could not be run
    bool timed_out = false;  // killed at the time limit (`out` then holds what came before)
    std::string out;         // standard output, and standard error when asked for
};

// Runs argv (argv[0] looked up on PATH unless it has a slash) with stdin
// from /dev/null and this process's environment; kills it after `limit`.
Captured run_captured(const std::vector<std::string>& argv, std::chrono::milliseconds limit,
                      bool with_stderr = false);

// Runs argv in the foreground with this process's stdin, stdout and stderr
// (so it may ask the user on the terminal), with `set_env` ("NAME=value")
// added to this process's environment; no time limit. The exit status as
// in Captured::status.
int run_attached(const std::vector<std::string>& argv,
                 const std::vector<std::string>& set_env = {});

}  // namespace hostkeeper::helper::client
