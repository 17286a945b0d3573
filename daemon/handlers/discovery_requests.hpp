#pragma once
// The discovery request: discover (PROTOCOL.md).

#include <boost/asio/awaitable.hpp>
#include <utility>

#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

// Held by reference: declared, not included.
namespace hostkeeper::daemon::discovery {
class DiscoveryService;
}

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
