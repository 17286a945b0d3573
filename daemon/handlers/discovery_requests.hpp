#pragma once
// The discovery request: discover (PROTOCOL.md).

// clang-format off
#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio/awaitable.hpp>

#include "daemon/discovery/discovery_service.hpp"
#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

namespace hostkeeper::daemon::handlers {

class DiscoveryRequests {
  public:
    explicit DiscoveryRequests(discovery::DiscoveryService& discovery) : discovery_(discovery) {}
    // Throws proto::Error (and its DiscoveryError kind).
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    discovery::DiscoveryService& discovery_;
};

}  // namespace hostkeeper::daemon::handlers
