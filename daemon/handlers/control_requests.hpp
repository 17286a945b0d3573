#pragma once
// The requests about the daemon itself: hello, status, flush, stop,
// registry_cache_sync, registry_run and registry_run_blocks (PROTOCOL.md).
// `stop` answers, and the server stops once the answer is written.

#include <boost/asio/awaitable.hpp>
#include <utility>

#include "daemon/handlers/daemon_info.hpp"
#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

// Held by reference: declared, not included.
namespace hostkeeper::daemon::credentials {
class CredentialService;
}
namespace hostkeeper::daemon::discovery {
class DiscoveryService;
}
namespace hostkeeper::daemon::registry {
class RegistryService;
}
namespace hostkeeper::daemon::registry_cache {
class RegistryCache;
}
namespace hostkeeper::daemon::backends {
class KeyringAdmin;
}

namespace hostkeeper::daemon::handlers {

class ControlRequests {
  public:
    ControlRequests(credentials::CredentialService& credentials,
                    discovery::DiscoveryService& discovery, registry::RegistryService& registry,
                    registry_cache::RegistryCache& cache, backends::KeyringAdmin& keyring,
                    const DaemonInfo& daemon)
        : credentials_(credentials),
          discovery_(discovery),
          registry_(registry),
          cache_(cache),
          keyring_(keyring),
          daemon_(daemon) {}
    // Throws proto::Error.
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    credentials::CredentialService& credentials_;
    discovery::DiscoveryService& discovery_;
    registry::RegistryService& registry_;
    registry_cache::RegistryCache& cache_;
    backends::KeyringAdmin& keyring_;
    const DaemonInfo& daemon_;
};

}  // namespace hostkeeper::daemon::handlers
