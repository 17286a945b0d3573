#pragma once
// What the helper and the command line share on their command lines: the
// --socket and --timeout options, and how a failure becomes a message on
// stderr and an exit code (docs/manual/exit-codes.md).

#include <CLI/CLI.hpp>
#include <string>

#include "helper/client/daemon_client.hpp"
#include "helper/client/run_reporting.hpp"

namespace hostkeeper::helper::client {

struct CommonOptions {
    std::string socket;
    double timeout_seconds = 30;

    void add_to(CLI::App& app, const std::string& timeout_help);
    ClientOptions client_options() const;
};

// Parses argv; on --help/--version or a usage error, returns the exit code to
// end with (CLI11 has printed what to print).
std::optional<int> parse_or_exit(CLI::App& app, int argc, char** argv);

// "1d2h3m4s", "15m0s", "7s": a duration for people.
std::string duration_text(long long seconds);

}  // namespace hostkeeper::helper::client
