#pragma once
// hostkeeper status [--json]: the running daemon for people (pid, version,
// uptime, the keyring backend and why, the credentials, discovery and
// registry caches' counters, the registry cache's listener), or its answer
// as JSON. Never starts a daemon: reporting on one must not start one.

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

int run_status(const client::ClientOptions& client, bool json);

}  // namespace hostkeeper::helper::cli
