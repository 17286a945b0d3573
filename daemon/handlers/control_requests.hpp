#pragma once
// The requests about the daemon itself: hello, status, flush, stop
// (PROTOCOL.md). `stop` answers, and the server stops once the answer is
// written.

// clang-format off
#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio/awaitable.hpp>

#include "daemon/credentials/credential_service.hpp"
#include "daemon/discovery/discovery_service.hpp"
#include "daemon/registry/registry_service.hpp"
#include "daemon/handlers/replies.hpp"
#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

namespace hostkeeper::daemon::handlers {

class ControlRequests {
  public:
    ControlRequests(credentials::CredentialService& credentials, discovery::DiscoveryService& discovery,
                    registry::RegistryService& registry, const DaemonInfo& daemon)
        : credentials_(credentials), discovery_(discovery), registry_(registry), daemon_(daemon) {}
    // Throws proto::Error.
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    credentials::CredentialService& credentials_;
    discovery::DiscoveryService& discovery_;
    registry::RegistryService& registry_;
    const DaemonInfo& daemon_;
};

}  // namespace hostkeeper::daemon::handlers
