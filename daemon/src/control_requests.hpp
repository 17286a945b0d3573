#pragma once
// The requests about the daemon itself: hello, status, flush, stop
// (PROTOCOL.md). `stop` answers, and the server stops once the answer is
// written.

// clang-format off
#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio/awaitable.hpp>

#include "credential_service.hpp"
#include "discovery_service.hpp"
#include "registry_service.hpp"
#include "replies.hpp"
#include "request_fields.hpp"
#include "request_handler.hpp"

namespace hostkeeper::daemon {

class ControlRequests {
  public:
    ControlRequests(CredentialService& credentials, DiscoveryService& discovery,
                    RegistryService& registry, const DaemonInfo& daemon)
        : credentials_(credentials), discovery_(discovery), registry_(registry), daemon_(daemon) {}
    // Throws proto::Error.
    boost::asio::awaitable<Reply> handle(const Request& request);

  private:
    CredentialService& credentials_;
    DiscoveryService& discovery_;
    RegistryService& registry_;
    const DaemonInfo& daemon_;
};

}  // namespace hostkeeper::daemon
