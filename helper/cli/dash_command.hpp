#pragma once
// Whether a command `hostkeeper exec` runs is dash (Debian's /bin/sh) or a
// script dash interprets: dash drops environment variables whose names are
// not shell names (TF_TOKEN_registry_example_com:8443), bash and execve keep
// them. Only then is a warning about such names worth printing.

#include <string>

namespace hostkeeper::helper::cli {

// `command` as execvp finds it (PATH when it has no '/'), symlinks followed:
// dash itself, or a file whose "#!" line names dash (directly, or through
// `/usr/bin/env sh`). False when it cannot be found or read.
bool runs_under_dash(const std::string& command);

}  // namespace hostkeeper::helper::cli
