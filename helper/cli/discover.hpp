#pragma once
// hostkeeper discover HOST [SERVICE]: the daemon's discovery answer for
// people (services with absolute URLs, where the answer came from, how long
// it stays fresh), one service's URL for scripts, or the answer as JSON.
// A service the host lacks exits 3, saying which versions it does offer.

#include <string>

#include "helper/client/daemon_client.hpp"

namespace hostkeeper::helper::cli {

struct DiscoverOptions {
    std::string host;
    std::string service;  // "" : all of them
    bool json = false;
    bool refresh = false;
};

int run_discover(const client::ClientOptions& client, const DiscoverOptions& options);

}  // namespace hostkeeper::helper::cli
