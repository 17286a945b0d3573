#pragma once
// hostkeeper exec --registry-cache -- COMMAND [ARGS...]: COMMAND (a
// `terraform init`, or a whole CI script) and everything it starts get the
// registry cache for one run, on machines without the registry port.
//
// The run binds a loopback port of its own (127.0.0.1, a port the kernel
// picks) before COMMAND starts and holds it until COMMAND and every process
// it started have exited (it is their subreaper), so no other process can
// take the port while any of the run's requests may use it. It asks the
// user's hostkeeperd (registry_run, PROTOCOL.md; starting it as any client
// does) to serve the port: the daemon connects to the run's link socket, in
// a private directory of the run's, and receives the listening socket. When
// the daemon goes away, the run answers each request with a 503 that says
// why, starts the daemon again and hands it the socket again. Only the
// kernel's word on each client's uid lets a connection in, on both sides.
//
// COMMAND's environment has TF_CLI_CONFIG_FILE naming the run's CLI
// configuration (run_config.hpp, mode 0600 in the private directory),
// removed when the run ends, also after SIGINT, SIGTERM or SIGHUP, which
// are passed on to COMMAND. A run killed outright leaves its directory,
// which the next run removes once its process is gone.
//
// Where the registry port is usable, the run uses it: COMMAND is run as
// `hostkeeper exec` runs it, and nothing is generated.

#include <string>
#include <vector>

#include "helper/client/daemon_client.hpp"
#include "proto/secret.hpp"

namespace hostkeeper::helper::cli {

// Runs `command` with `environment` ("NAME=VALUE") and the run's registry
// cache; COMMAND's exit status (128+N when a signal N ended it), 127 when it
// is not found, 2 for a user CLI configuration that does not scan (nothing
// is run), 1 when the port or the run's files cannot be made.
int run_with_registry_cache(const client::ClientOptions& client,
                            const std::vector<std::string>& command,
                            const std::vector<proto::Secret>& environment);

}  // namespace hostkeeper::helper::cli
