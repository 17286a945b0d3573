#pragma once
// docker-credential-hostkeeper: a Docker credential helper
// (docker/docker-credential-helpers' protocol) over hostkeeperd's docker_*
// requests (proto/PROTOCOL.md, "Docker credentials").
//
// The client runs `docker-credential-hostkeeper VERB` with one argument:
//   store    stdin {"ServerURL":..,"Username":..,"Secret":..}; prints nothing
//   get      stdin the server URL; stdout {"ServerURL":..,"Username":..,"Secret":..}
//   erase    stdin the server URL; prints nothing
//   list     stdin unused; stdout {"SERVER":"USERNAME",...}
//   version  stdout "docker-credential-hostkeeper (hostkeeper) VERSION"
// Every failure is one line on standard OUTPUT (the client reads it there)
// and exit status 1 (docker_credentials.hpp has the lines clients recognise).

#include <string>
#include <string_view>
#include <vector>

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::docker_credential_helper {

inline constexpr std::string_view kProgram = "docker-credential-hostkeeper";

// The whole helper: `args` is argv without the program name; the protocol's
// input is read from `in`, its output and errors written to `out`. Returns
// the exit status (0, or 1 for any failure).
int run(const std::vector<std::string>& args, int in, int out,
        const client::ClientOptions& options);

}  // namespace hostkeeper::helper::docker_credential_helper
