#pragma once
// The discovery request: discover (PROTOCOL.md).

// clang-format off
#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio/awaitable.hpp>

#include "discovery_service.hpp"
#include "request_fields.hpp"
#include "request_handler.hpp"

namespace hostkeeper::daemon {

class DiscoveryRequests {
  public:
    explicit DiscoveryRequests(DiscoveryService& discovery) : discovery_(discovery) {}
    // Throws proto::Error (and its DiscoveryError kind).
    boost::asio::awaitable<Reply> handle(const Request& request);

  private:
    DiscoveryService& discovery_;
};

}  // namespace hostkeeper::daemon
