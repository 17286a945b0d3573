#pragma once
// The credentials requests: get, store, forget (PROTOCOL.md).

#include <boost/asio/awaitable.hpp>
#include <utility>

#include "daemon/handlers/request_fields.hpp"
#include "daemon/server/request_handler.hpp"

// Held by reference: declared, not included.
namespace hostkeeper::daemon::credentials {
class TokenLifecycle;
}
namespace hostkeeper::daemon::registry_cache {
class RegistryCache;
}

namespace hostkeeper::daemon::handlers {

class CredentialRequests {
  public:
    // `cache`: a `get` tells the registry cache which hosts Terraform uses
    // (its one question to the cache: learn the host).
    CredentialRequests(credentials::TokenLifecycle& credentials,
                       registry_cache::RegistryCache& cache)
        : credentials_(credentials), cache_(cache) {}
    // Throws proto::Error.
    boost::asio::awaitable<server::Reply> handle(const Request& request);

  private:
    credentials::TokenLifecycle& credentials_;
    registry_cache::RegistryCache& cache_;
};

}  // namespace hostkeeper::daemon::handlers
