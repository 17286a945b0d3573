#pragma once
// The socket requests of the registry clients (module_versions,
// module_download, provider_versions, provider_package, provider_fetch):
// fields read, RegistryService asked, the answer reshaped where the request
// asks it (a constraint, a mirror's package, a fetched package; see
// proto/PROTOCOL.md).

#include <boost/asio/awaitable.hpp>
#include <utility>

#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

// Held by reference: declared, not included.
namespace hostkeeper::daemon::registry {
class RegistryService;
}

namespace hostkeeper::daemon::handlers {

class RegistryRequests {
  public:
    explicit RegistryRequests(registry::RegistryService& registry) : registry_(registry) {}
    // Throws proto::Error (and its RegistryError, DiscoveryError kinds).
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    registry::RegistryService& registry_;
};

}  // namespace hostkeeper::daemon::handlers
