#pragma once
// Running another program to completion and keeping what it printed, for
// the command line's checks (hostkeeperd --check-config, ...).

#include <string>
#include <vector>

namespace hostkeeper::client {

struct Captured {
    int status = 127;  // exit status; 128+N when killed by signal N; 127 when it could not be run
    std::string out;
    std::string err;
};

// Runs argv[0] (a path) with stdin from /dev/null and this process's environment.
Captured run_captured(const std::vector<std::string>& argv);

}  // namespace hostkeeper::client
