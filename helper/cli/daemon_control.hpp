#pragma once
// hostkeeper flush [HOST], start and stop: the daemon's caches and its life.
// flush and stop never start a daemon; start starts one unless it is
// running, and stop returns once that process has exited.

#include <string>

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

// Drops the daemon's cached entries: all of them, or HOST's.
int run_flush(const client::ClientOptions& client, const std::string& host);
int run_start(client::ClientOptions client);
int run_stop(const client::ClientOptions& client);

}  // namespace hostkeeper::helper::cli
