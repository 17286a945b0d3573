#pragma once
// How a failure of the helper or the command line becomes a message on
// stderr and an exit code (docs/manual/exit-codes.md). Apart from common_cli, so
// that the credentials helper links no CLI11.

#include <functional>
#include <string>

namespace hostkeeper::helper::client {

// Runs `body`; any exception becomes "PROGRAM: message" on stderr, through
// the printable filter (printable_output.hpp), and the exit code for its kind.
int run_reporting(const std::string& program, const std::function<int()>& body);

}  // namespace hostkeeper::helper::client
